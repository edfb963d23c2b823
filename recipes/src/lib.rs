//! placeholder
#![allow(dead_code)]
mod naming;
