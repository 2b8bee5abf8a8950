//! The workspace's own source files, for the tests that read them as text (sizes, plurals).

use std::path::{Path, PathBuf};

/// The workspace's root folder (the one holding `sim/` and `game/`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ sits in the workspace")
        .to_path_buf()
}

/// Every file below `folder` whose name `keep` accepts, in a stable order, skipping build
/// output, dependencies, hidden folders and test folders.
pub fn files_below(folder: &Path, keep: fn(&str) -> bool, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", folder.display()))
        .map(|entry| entry.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(name, "target" | "tests" | "node_modules") && !name.starts_with('.') {
                files_below(&path, keep, files);
            }
        } else if keep(name) {
            files.push(path);
        }
    }
}
