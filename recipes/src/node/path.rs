//! ZooKeeper paths: a node's parent, its name, its depth, a child's path, and whether one
//! path is at or below another.

/// The depth of `path` (`/` is 0, `/a` is 1).
pub(crate) fn depth(path: &str) -> usize {
    if path == "/" {
        0
    } else {
        path.matches('/').count()
    }
}

/// The parent of `path`, `None` for `/`.
pub(crate) fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(i) if i > 0 => Some(&path[..i]),
        _ => None,
    }
}

/// The last path segment: the child's name.
pub(crate) fn child_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The path of the child `name` of `parent`.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether `path` is `root` or below it.
pub(crate) fn within(root: &str, path: &str) -> bool {
    root == "/"
        || path == root
        || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(depth("/"), 0);
        assert_eq!(depth("/a/b"), 2);
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
        assert_eq!(child_name("/a/b/c-0001"), "c-0001");
        assert_eq!(join("/", "x"), "/x");
        assert_eq!(join("/a", "x"), "/a/x");
        assert!(within("/a", "/a"));
        assert!(within("/a", "/a/b"));
        assert!(!within("/a", "/ab"));
        assert!(within("/", "/x"));
    }
}
