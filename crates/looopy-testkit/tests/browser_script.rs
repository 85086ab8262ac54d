//! `Browser::run_script` with the real Node.js on small scripts: the verdict
//! it reads, the environment it passes, and the time limit.
#![allow(clippy::unwrap_used)] // test helpers outside #[test] functions

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use looopy_testkit::external::{Browser, require, which};

/// Node.js with stand-ins for Chromium, playwright-core and axe-core (the
/// scripts here only print what they are given).
fn node_only() -> Option<Browser> {
    let node = require("LOOOPY_NODE", which("node"), "Node.js")?;
    Some(Browser {
        chromium: PathBuf::from("/chromium/stand-in"),
        playwright_core: PathBuf::from("/playwright-core/stand-in"),
        axe_core: PathBuf::from("/axe-core/stand-in"),
        node,
    })
}

/// Writes `body` as the script `name` under the tests' temp folder.
fn script(name: &str, body: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[tokio::test]
async fn a_script_that_prints_all_ok_passes_and_sees_its_environment() {
    let Some(browser) = node_only() else {
        return;
    };
    let body = "console.log(process.env.CHROMIUM, process.env.PLAYWRIGHT_CORE, process.env.URL);\n\
                console.log(process.env.AXE_CORE);\n\
                console.log(typeof require(process.env.BROWSER_KIT).axeViolations);\n\
                console.log('ALL OK');\n";
    let env: [(&str, &dyn AsRef<OsStr>); 1] = [("URL", &"http://127.0.0.1:1")];
    let run = browser
        .run_script(&script("ok.cjs", body), &env, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(run.all_ok(), "{run:?}");
    assert!(
        run.stdout.starts_with(
            "/chromium/stand-in /playwright-core/stand-in http://127.0.0.1:1\n\
                 /axe-core/stand-in\nfunction\n"
        ),
        "{run:?}"
    );
}

#[tokio::test]
async fn a_failed_check_or_a_missing_all_ok_is_no_pass() {
    let Some(browser) = node_only() else {
        return;
    };
    let failing = "console.log('ALL OK'); console.error('check failed: x'); process.exit(1);\n";
    let run = browser
        .run_script(
            &script("failing.cjs", failing),
            &[],
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(!run.success && !run.all_ok(), "{run:?}");
    assert!(run.stderr.contains("check failed: x"), "{run:?}");

    let silent = "console.log('ok - one check');\n";
    let run = browser
        .run_script(&script("silent.cjs", silent), &[], Duration::from_secs(60))
        .await
        .unwrap();
    assert!(run.success && !run.all_ok(), "{run:?}");
}

#[tokio::test]
async fn a_script_past_its_limit_is_a_timed_out_error() {
    let Some(browser) = node_only() else {
        return;
    };
    let hangs = script("hangs.cjs", "setTimeout(() => {}, 600000);\n");
    let err = browser
        .run_script(&hangs, &[], Duration::from_millis(500))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(err.to_string().contains("hangs.cjs"), "{err}");
}
