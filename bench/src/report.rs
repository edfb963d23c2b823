//! The figures a run produces: one `figure NAME VALUE UNIT` line each as soon as it is
//! measured, and a markdown table of all of them (with targets) at the end.

use std::fmt::Write as _;

/// What a figure should reach.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    AtLeast(f64),
    AtMost(f64),
}

impl Target {
    fn met(self, value: f64) -> bool {
        match self {
            Target::AtLeast(t) => value >= t,
            Target::AtMost(t) => value <= t,
        }
    }

    fn describe(self) -> String {
        match self {
            Target::AtLeast(t) => format!("≥ {}", format_value(t)),
            Target::AtMost(t) => format!("≤ {}", format_value(t)),
        }
    }
}

struct Row {
    name: String,
    value: Option<f64>,
    unit: String,
    target: Option<Target>,
    note: String,
}

/// Collects figures in the order they were measured.
#[derive(Default)]
pub struct Report {
    rows: Vec<Row>,
}

/// Few significant digits: the machines are noisy, more digits would be noise.
pub fn format_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || v == v.trunc() && a < 1e15 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

impl Report {
    /// Records and prints a figure.
    pub fn figure(&mut self, name: &str, value: f64, unit: &str) {
        self.push(name, value, unit, None);
    }

    /// Records and prints a figure, with its target if it has one.
    pub fn figure_with_target(
        &mut self,
        name: &str,
        value: f64,
        unit: &str,
        target: Option<Target>,
    ) {
        self.push(name, value, unit, target);
    }

    fn push(&mut self, name: &str, value: f64, unit: &str, target: Option<Target>) {
        let shown = format_value(value);
        match target {
            Some(t) => println!(
                "figure {name} {shown} {unit}    # target {} {}",
                t.describe(),
                if t.met(value) { "met" } else { "MISSED" }
            ),
            None => println!("figure {name} {shown} {unit}"),
        }
        self.rows.push(Row {
            name: name.to_string(),
            value: Some(value),
            unit: unit.to_string(),
            target,
            note: String::new(),
        });
    }

    /// Records a figure that this run could not measure, and why.
    pub fn not_measured(&mut self, name: &str, unit: &str, why: &str) {
        println!("# not measured: {name} ({why})");
        self.rows.push(Row {
            name: name.to_string(),
            value: None,
            unit: unit.to_string(),
            target: None,
            note: why.to_string(),
        });
    }

    /// The markdown table of every figure recorded so far.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str("| Figure | Value | Unit | Target | |\n|---|---:|---|---|---|\n");
        for row in &self.rows {
            let (value, target, verdict) = match (row.value, row.target) {
                (Some(v), Some(t)) => (
                    format_value(v),
                    t.describe(),
                    if t.met(v) { "met" } else { "**missed**" }.to_string(),
                ),
                (Some(v), None) => (format_value(v), String::new(), String::new()),
                (None, _) => ("—".to_string(), String::new(), row.note.clone()),
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                row.name, value, row.unit, target, verdict
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_few_digits() {
        assert_eq!(format_value(1_234_567.8), "1234568");
        assert_eq!(format_value(12.345), "12.35");
        assert_eq!(format_value(0.95), "0.950");
        assert_eq!(format_value(3.0), "3");
    }

    #[test]
    fn table_marks_missed_targets() {
        let mut r = Report::default();
        r.figure_with_target("a", 0.5, "x", Some(Target::AtLeast(0.95)));
        r.figure_with_target("b", 1.2, "x", Some(Target::AtMost(1.5)));
        r.not_measured("c", "x", "no server");
        let t = r.markdown();
        assert!(t.contains("| `a` | 0.500 | x | ≥ 0.950 | **missed** |"));
        assert!(t.contains("| `b` | 1.20 | x | ≤ 1.50 | met |"));
        assert!(t.contains("| `c` | — | x |  | no server |"));
    }
}
