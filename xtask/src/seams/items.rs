//! Public items per crate, and by how many paths each is reachable.
//!
//! The approximation: an item is a `pub fn/struct/enum/trait/type/const/union`
//! (unrestricted `pub`) at the top level of a file, outside `#[cfg(test)]`
//! (methods, items of inline modules and items made by macros are not
//! counted). It has one path of its own when every module from the crate
//! root to its file is declared `pub mod`, and one more for every `pub use`
//! in a module so reachable that leads to it (by name, by a glob of its
//! module, or by re-exporting its module). It is reachable when it has at
//! least one path.

use std::collections::BTreeMap;

use super::model::Crate;

/// The public items of a crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PublicItems {
    /// Items reachable from the crate root.
    pub(super) reachable: usize,
    /// Of those, the `fn`, `struct`, `enum` and `trait` items.
    pub(super) fn_struct_enum_trait: usize,
    /// Those reachable by more than two paths: (file, item, paths).
    pub(super) many_paths: Vec<(String, String, usize)>,
}

/// Counts the crate's public items.
pub(super) fn count(krate: &Crate) -> PublicItems {
    let public_module: Vec<bool> = krate
        .files
        .iter()
        .map(|f| module_is_public(krate, &f.module))
        .collect();
    let mut paths: BTreeMap<(usize, String), usize> = BTreeMap::new();
    let mut kinds: BTreeMap<(usize, String), &'static str> = BTreeMap::new();
    for (file, f) in krate.files.iter().enumerate() {
        for item in &f.facts.items {
            *paths.entry((file, item.name.clone())).or_default() +=
                usize::from(public_module[file]);
            kinds.insert((file, item.name.clone()), item.kind);
        }
    }
    for (file, f) in krate.files.iter().enumerate() {
        if !public_module[file] {
            continue;
        }
        for u in f
            .facts
            .uses
            .iter()
            .filter(|u| u.public && u.module_level && u.inline.is_empty())
        {
            let Some(abs) = krate.absolute(&f.module, &u.path) else {
                continue;
            };
            let target = krate.resolve(&abs);
            match (&target.item, u.glob) {
                (Some(name), false) => {
                    if let Some(n) = paths.get_mut(&(target.file, name.clone())) {
                        *n += 1;
                    }
                }
                // A glob, or a module re-exported whole: each of its items.
                _ => {
                    for item in &krate.files[target.file].facts.items {
                        if let Some(n) = paths.get_mut(&(target.file, item.name.clone())) {
                            *n += 1;
                        }
                    }
                }
            }
        }
    }
    PublicItems {
        reachable: paths.values().filter(|n| **n > 0).count(),
        fn_struct_enum_trait: paths
            .iter()
            .filter(|(key, n)| {
                **n > 0
                    && kinds
                        .get(*key)
                        .is_some_and(|k| ["fn", "struct", "enum", "trait"].contains(k))
            })
            .count(),
        many_paths: paths
            .iter()
            .filter(|(_, n)| **n > 2)
            .map(|((file, name), n)| (krate.files[*file].path.clone(), name.clone(), *n))
            .collect(),
    }
}

/// Whether every module from the root to `module` is declared `pub mod`.
fn module_is_public(krate: &Crate, module: &[String]) -> bool {
    (1..=module.len()).all(|len| {
        let parent = &module[..len - 1];
        let name = &module[len - 1];
        krate.file_of(parent).is_some_and(|p| {
            krate.files[p]
                .facts
                .mods
                .iter()
                .any(|m| m.name == *name && m.public)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_count_once_reachable_and_paths_add_up() {
        let files = [
            // `api` is public: its items have a path of their own, and lib.rs
            // re-exports `Widget` twice more (by name and through a glob).
            (
                "lib.rs",
                "pub mod api; mod hidden; pub use api::Widget; pub use api::*; pub use hidden::Found; pub fn root() {}",
            ),
            (
                "api.rs",
                "pub struct Widget; pub enum Mode { A } pub(crate) fn internal() {} pub type Alias = u8; pub const LIMIT: u8 = 1;",
            ),
            // `hidden` is private: `Found` is reachable through lib.rs, `Lost` not at all.
            ("hidden.rs", "pub struct Found; pub struct Lost;"),
        ];
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(p, s)| (p.to_string(), s.to_string()))
            .collect();
        let counted = count(&Crate::new("demo", &sources));
        // root, Widget, Mode, Alias, LIMIT, Found; the first four kinds: all but Alias and LIMIT.
        assert_eq!(counted.reachable, 6);
        assert_eq!(counted.fn_struct_enum_trait, 4);
        assert_eq!(
            counted.many_paths,
            [("api.rs".to_string(), "Widget".to_string(), 3)]
        );
    }
}
