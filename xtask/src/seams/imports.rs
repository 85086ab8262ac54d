//! Import circles between the files of one crate.
//!
//! File A depends on file B when A names something B defines: a `use`
//! declaration or a path in code (`crate::…`, `super::…`, `self::…`, or a
//! child module's name) that leads to B, re-exports followed to the file
//! that defines the item. A `mod b;` declaration alone is not a
//! dependency (every child would otherwise form a circle with its parent
//! as soon as it names `super::`), nor is a `pub use` of an item of the
//! module's own descendants (`pub use child::Item` in `lib.rs` or a
//! `mod.rs` is the module's public face: the items are defined below it).
//! Circles are the strongly connected
//! components of more than one file (Tarjan's algorithm).

use std::collections::BTreeSet;

use super::model::Crate;

/// The files each file depends on (indices into `krate.files`).
pub(super) fn edges(krate: &Crate) -> Vec<BTreeSet<usize>> {
    let mut out = vec![BTreeSet::new(); krate.files.len()];
    for (from, file) in krate.files.iter().enumerate() {
        let named = file
            .facts
            .uses
            .iter()
            .filter(|u| !(u.public && reexports_own_descendant(&file.module, &u.path)))
            .map(|u| (&u.inline, &u.path))
            .chain(file.facts.paths.iter().map(|(inline, path)| (inline, path)));
        for (inline, path) in named {
            let at: Vec<String> = file.module.iter().chain(inline.iter()).cloned().collect();
            let Some(abs) = krate.absolute(&at, path) else {
                continue;
            };
            let to = krate.resolve(&abs).file;
            if to != from {
                out[from].insert(to);
            }
        }
    }
    out
}

/// Whether a `pub use` path leads into a module below the file's own
/// (`pub use child::Item`, `pub use self::a::b`): the module's public face,
/// not a dependency of its code.
fn reexports_own_descendant(module: &[String], path: &[String]) -> bool {
    match path.first().map(String::as_str) {
        Some("self") => path.len() > 2,
        Some("crate") => path.len() > module.len() + 2 && path[1..=module.len()] == *module,
        Some("super") | None => false,
        // A child module's name (a path to another crate never reaches `edges`).
        Some(_) => true,
    }
}

/// The strongly connected components of more than one node, each sorted,
/// in the order of their smallest node.
pub(super) fn circles(graph: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct Tarjan<'g> {
        graph: &'g [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        found: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.next);
            self.low[v] = self.next;
            self.next += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.graph[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort_unstable();
                    self.found.push(component);
                }
            }
        }
    }
    let n = graph.len();
    let mut t = Tarjan {
        graph,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            t.visit(v);
        }
    }
    t.found.sort();
    t.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, pairs: &[(usize, usize)]) -> Vec<BTreeSet<usize>> {
        let mut g = vec![BTreeSet::new(); n];
        for &(a, b) in pairs {
            g[a].insert(b);
        }
        g
    }

    #[test]
    fn circles_are_the_components_of_more_than_one_node() {
        // 0 -> 1 -> 2 -> 0 is a circle; 3 <-> 4 another; 5 -> 3 and 6 alone are not.
        let g = graph(7, &[(0, 1), (1, 2), (2, 0), (3, 4), (4, 3), (5, 3), (2, 5)]);
        assert_eq!(circles(&g), [vec![0, 1, 2], vec![3, 4]]);
        assert!(circles(&graph(3, &[(0, 1), (1, 2)])).is_empty());
    }

    #[test]
    fn a_crate_s_circles_follow_uses_paths_and_re_exports() {
        let files = [
            ("lib.rs", "mod a; mod b; mod c; mod d; pub use d::Shared;"),
            // a and b name each other: one through a use, one through a path in code.
            ("a.rs", "use crate::b::Beta; pub struct Alpha;"),
            ("b.rs", "pub struct Beta; fn f() { super::a::Alpha; }"),
            // c names `crate::Shared`, re-exported from d: the edge goes to d, not lib.rs.
            ("c.rs", "use crate::Shared; pub struct Gamma;"),
            (
                "d.rs",
                "pub struct Shared; #[cfg(test)] mod tests { use crate::c::Gamma; }",
            ),
        ];
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect();
        let krate = Crate::new("demo", &sources);
        let e = edges(&krate);
        let names = |set: &BTreeSet<usize>| -> Vec<String> {
            set.iter().map(|i| krate.files[*i].path.clone()).collect()
        };
        assert!(
            e[0].is_empty(),
            "lib.rs only re-exports what its children define"
        );
        assert_eq!(names(&e[3]), ["d.rs"]);
        assert!(e[4].is_empty(), "a test module's use is not a dependency");
        let found: Vec<Vec<String>> = circles(&e)
            .iter()
            .map(|c| c.iter().map(|i| krate.files[*i].path.clone()).collect())
            .collect();
        assert_eq!(found, [vec!["a.rs".to_string(), "b.rs".to_string()]]);
    }
}
