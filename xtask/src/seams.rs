//! `cargo xtask seams`: counts of how the workspace's files and crates are
//! joined, read from the sources as text (no compiler, no new dependency):
//!
//! - import circles between the files of each crate (`imports`);
//! - public items per crate, and those reachable by more than two paths
//!   (`items`);
//! - string metadata keys that carry meaning between crates (`metadata`);
//! - the walk of one streamed token of a `SendStreamingMessage` from the
//!   socket to the model and back: a table kept by hand in `walk`, with
//!   its files and crate-border crossings counted.
//!
//! Each counter says in its module what it counts and what it leaves out.
//! `cargo xtask seams --walk` prints the walk's steps as well, and
//! `--all-keys` every metadata key seen, read across crates or not. The command
//! fails when a file of the walk no longer exists, so that the table is
//! updated with the code it describes.

mod imports;
mod items;
mod lex;
mod metadata;
mod model;
mod scan;
mod walk;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::util::root;
use model::Crate;

/// Runs the counters over `crates/*/src` and prints their tables.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    let crates = load(&root().join("crates"))?;
    // Written out at once at the end: a reader that stops early (`| head`)
    // is not an error.
    let mut out = String::new();
    macro_rules! say {
        ($($t:tt)*) => {
            writeln!(out, $($t)*)?
        };
    }
    say!(
        "{:<22} {:>6} {:>15} {:>13} {:>22} {:>13}",
        "crate",
        "files",
        "import circles",
        "public items",
        "fn/struct/enum/trait",
        "over 2 paths"
    );
    let mut all_circles = Vec::new();
    let (mut total_files, mut total_circles, mut total_items, mut total_core, mut total_many) =
        (0, 0, 0, 0, 0);
    for c in &crates {
        let found = imports::circles(&imports::edges(c));
        let public = items::count(c);
        say!(
            "{:<22} {:>6} {:>15} {:>13} {:>22} {:>13}",
            c.name,
            c.files.len(),
            found.len(),
            public.reachable,
            public.fn_struct_enum_trait,
            public.many_paths.len()
        );
        total_core += public.fn_struct_enum_trait;
        total_files += c.files.len();
        total_circles += found.len();
        total_items += public.reachable;
        total_many += public.many_paths.len();
        for circle in found {
            let files: Vec<&str> = circle.iter().map(|i| c.files[*i].path.as_str()).collect();
            all_circles.push(format!("{}: {}", c.name, files.join(", ")));
        }
        for (file, item, n) in &public.many_paths {
            say!("    {item} ({file}) is reachable by {n} paths");
        }
    }
    say!(
        "{:<22} {:>6} {:>15} {:>13} {:>22} {:>13}",
        "total",
        total_files,
        total_circles,
        total_items,
        total_core,
        total_many
    );

    say!("\nimport circles between files ({total_circles}):");
    for line in &all_circles {
        say!("  {line}");
    }

    let shared = metadata::shared_keys(&crates);
    let keys = if args.contains(&"--all-keys") {
        let all = metadata::all_keys(&crates);
        say!(
            "\nmetadata keys seen ({}; {} carry meaning between crates):",
            all.len(),
            shared.len()
        );
        all
    } else {
        say!(
            "\nmetadata keys that carry meaning between crates ({}):",
            shared.len()
        );
        shared
    };
    for (key, used) in &keys {
        let join = |s: &std::collections::BTreeSet<String>| {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        };
        say!(
            "  {key:<24} written in: {:<40} read in: {}",
            join(&used.writers),
            join(&used.readers)
        );
    }

    let counted = walk::count(walk::STEPS);
    say!(
        "\nwalk of one streamed token (SendStreamingMessage, socket to model and back): {} steps, {} files in {} crates, {} crate-border crossings",
        walk::STEPS.len(),
        counted.files,
        counted.crates,
        counted.crossings
    );
    if args.contains(&"--walk") {
        for (n, step) in walk::STEPS.iter().enumerate() {
            say!(
                "  {:>2}. {:<20} {:<34} {}",
                n + 1,
                step.krate,
                step.file,
                step.what
            );
        }
    }
    match std::io::stdout().write_all(out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            return Err(e).context("could not write the tables");
        }
        _ => {}
    }
    let missing = walk::missing(&root(), walk::STEPS);
    if !missing.is_empty() {
        bail!(
            "the walk in xtask/src/seams/walk.rs names files that no longer exist ({}): follow the token through the code again and update the table",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Every crate under `dir` with a `src/`: its library sources (a binary's
/// `main.rs` beside a `lib.rs`, and `src/bin/`, are left out).
fn load(dir: &Path) -> Result<Vec<Crate>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("could not list {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut crates = Vec::new();
    for name in names {
        let src = dir.join(&name).join("src");
        let mut sources = Vec::new();
        collect(&src, &src, &mut sources)?;
        sources.sort();
        if sources.iter().any(|(p, _)| p == "lib.rs") {
            sources.retain(|(p, _)| p != "main.rs" && !p.starts_with("bin/"));
        }
        crates.push(Crate::new(&name, &sources));
    }
    Ok(crates)
}

/// The `.rs` files under `dir`, as (path under `base`, source).
fn collect(base: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<()> {
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("could not list {}", dir.display()))?
    {
        let path = entry?.path();
        if path.is_dir() {
            collect(base, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(base)
                .with_context(|| format!("{} is not under {}", path.display(), base.display()))?
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("could not read {}", path.display()))?;
            out.push((rel, text));
        }
    }
    Ok(())
}
