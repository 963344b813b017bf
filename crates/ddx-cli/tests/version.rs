//! The version is stated once (the workspace `Cargo.toml`) and every place that shows it
//! agrees: `ddx::VERSION` and its parts, `ddx --version`, the writer recorded in a saved
//! equation, and every version requirement on a workspace crate.

mod common;

use std::path::Path;

/// The workspace manifest's `[workspace.package] version`, read as text.
fn stated() -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[workspace.package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("version = ") {
                return (v.trim_matches('"').to_string(), manifest.clone());
            }
        }
    }
    panic!("no version in [workspace.package]");
}

#[test]
fn every_place_shows_the_stated_version() {
    let (version, manifest) = stated();
    assert_eq!(ddx::VERSION, version);
    assert_eq!(
        format!(
            "{}.{}.{}",
            ddx::VERSION_MAJOR,
            ddx::VERSION_MINOR,
            ddx::VERSION_PATCH
        ),
        version
    );

    let run = common::Run::from(common::ddx().arg("--version").output().expect("runs"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim(), format!("ddx {version}"));

    let eq = ddx::rt::equation_text("x * y").expect("an equation");
    let bytes = eq.to_bytes().expect("saved");
    let writer = format!("ddx {version}");
    assert!(
        bytes.windows(writer.len()).any(|w| w == writer.as_bytes()),
        "the archive does not record the writer `{writer}`"
    );

    // A requirement on a workspace crate names this very version (crates.io needs one).
    let mut requirements = 0;
    let python = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ddx-python/Cargo.toml"),
    )
    .expect("the Python package's manifest");
    for line in manifest.lines().chain(python.lines()) {
        if line.contains("path = ") && line.contains("version = ") {
            let v = line
                .split("version = \"")
                .nth(1)
                .and_then(|s| s.split('"').next());
            assert_eq!(v, Some(version.as_str()), "{line}");
            requirements += 1;
        }
    }
    assert!(
        requirements >= 5,
        "found {requirements} workspace requirements"
    );
}
