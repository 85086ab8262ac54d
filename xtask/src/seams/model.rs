//! A crate as the counters see it: its files, each with its module path
//! and its facts, and how a path named in one file leads to the file that
//! defines it (through the `use` bindings of the modules on the way, the
//! way `pub use` re-exports are followed by the compiler).

use std::collections::BTreeMap;

use super::scan::{Facts, scan};

/// One source file of a crate.
#[derive(Debug, Clone)]
pub(super) struct File {
    /// Its path under the crate's `src/`, as written in reports.
    pub(super) path: String,
    /// Its module path from the crate root (`[]` for `lib.rs`).
    pub(super) module: Vec<String>,
    /// What it says.
    pub(super) facts: Facts,
}

/// One crate's library sources.
#[derive(Debug, Clone)]
pub(super) struct Crate {
    /// The crate's name.
    pub(super) name: String,
    /// Its files, by index.
    pub(super) files: Vec<File>,
    by_module: BTreeMap<Vec<String>, usize>,
}

/// What a path leads to: a file, and the item named in it when the path
/// goes past the file's module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// The defining file.
    pub(super) file: usize,
    /// The item's name in that file, if the path names one.
    pub(super) item: Option<String>,
}

/// The module path of a file from its path under `src/` (`a/mod.rs` and
/// `a.rs` are `a`; `lib.rs` and `main.rs` the root).
pub(super) fn module_of(path: &str) -> Vec<String> {
    let trimmed = path.strip_suffix(".rs").unwrap_or(path);
    let mut parts: Vec<String> = trimmed.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    parts
}

impl Crate {
    /// A crate from its files' paths under `src/` and their sources.
    pub(super) fn new(name: &str, sources: &[(String, String)]) -> Self {
        let mut files = Vec::new();
        let mut by_module = BTreeMap::new();
        for (path, src) in sources {
            let module = module_of(path);
            if by_module.contains_key(&module) {
                continue;
            }
            by_module.insert(module.clone(), files.len());
            files.push(File {
                path: path.clone(),
                module,
                facts: scan(src),
            });
        }
        Self {
            name: name.to_string(),
            files,
            by_module,
        }
    }

    /// The file of a module path, if the module is a file.
    pub(super) fn file_of(&self, module: &[String]) -> Option<usize> {
        self.by_module.get(module).copied()
    }

    /// The absolute module path a path written in module `at` starts from,
    /// and the rest of it; `None` when it leads out of the crate.
    pub(super) fn absolute(&self, at: &[String], path: &[String]) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut base: Vec<String> = at.to_vec();
        match first.as_str() {
            "crate" => base.clear(),
            "self" => {}
            "super" => {
                base.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            child => {
                let mut candidate = base.clone();
                candidate.push(child.to_string());
                self.file_of(&candidate)?;
                return Some(candidate.into_iter().chain(rest.iter().cloned()).collect());
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file (and item) an absolute path leads to, following `use`
    /// bindings of the modules on the way.
    pub(super) fn resolve(&self, path: &[String]) -> Target {
        self.resolve_depth(path, 0)
    }

    fn resolve_depth(&self, path: &[String], depth: usize) -> Target {
        let mut module: Vec<String> = Vec::new();
        let mut i = 0;
        while i < path.len() {
            let mut next = module.clone();
            next.push(path[i].clone());
            if self.file_of(&next).is_none() {
                break;
            }
            module = next;
            i += 1;
        }
        let file = self.file_of(&module).unwrap_or(0);
        let Some(name) = path.get(i) else {
            return Target { file, item: None };
        };
        if depth < 8
            && let Some(target) = self.through_binding(file, name, &path[i + 1..], depth)
        {
            return target;
        }
        Target {
            file,
            item: Some(name.clone()),
        }
    }

    /// Where `name` (then `rest`) leads when the module of `file` binds it
    /// with a `use`, or a glob of it defines it.
    fn through_binding(
        &self,
        file: usize,
        name: &str,
        rest: &[String],
        depth: usize,
    ) -> Option<Target> {
        let f = &self.files[file];
        let defined = f.facts.items.iter().any(|it| it.name == name);
        if defined {
            return None;
        }
        for u in f
            .facts
            .uses
            .iter()
            .filter(|u| u.module_level && u.inline.is_empty())
        {
            if u.binding.as_deref() == Some(name) && !u.glob {
                let abs = self.absolute(&f.module, &u.path)?;
                let full: Vec<String> = abs.into_iter().chain(rest.iter().cloned()).collect();
                return Some(self.resolve_depth(&full, depth + 1));
            }
        }
        for u in f
            .facts
            .uses
            .iter()
            .filter(|u| u.module_level && u.inline.is_empty() && u.glob)
        {
            let Some(abs) = self.absolute(&f.module, &u.path) else {
                continue;
            };
            let Some(glob_file) = self.file_of(&abs) else {
                continue;
            };
            let g = &self.files[glob_file].facts;
            let binds = g.uses.iter().any(|v| v.binding.as_deref() == Some(name));
            if g.items.iter().any(|it| it.name == name) || binds {
                let full: Vec<String> = abs
                    .into_iter()
                    .chain(std::iter::once(name.to_string()))
                    .chain(rest.iter().cloned())
                    .collect();
                return Some(self.resolve_depth(&full, depth + 1));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(files: &[(&str, &str)]) -> Crate {
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect();
        Crate::new("demo", &sources)
    }

    fn segs(s: &str) -> Vec<String> {
        s.split("::").map(str::to_string).collect()
    }

    #[test]
    fn module_paths_follow_the_file_layout() {
        assert_eq!(module_of("lib.rs"), Vec::<String>::new());
        assert_eq!(module_of("a/mod.rs"), ["a"]);
        assert_eq!(module_of("a/b.rs"), ["a", "b"]);
    }

    #[test]
    fn a_re_exported_name_leads_to_the_file_defining_it() {
        let c = krate(&[
            ("lib.rs", "mod a; pub use a::Thing;"),
            ("a/mod.rs", "mod b; pub use b::*;"),
            ("a/b.rs", "pub struct Thing;"),
        ]);
        let t = c.resolve(&segs("Thing"));
        assert_eq!(c.files[t.file].path, "a/b.rs");
        assert_eq!(t.item.as_deref(), Some("Thing"));
        let abs = c.absolute(&segs("a::b"), &segs("super::super::Thing"));
        assert_eq!(abs, Some(segs("Thing")));
        assert_eq!(c.absolute(&[], &segs("std::sync::Arc")), None);
    }
}
