//! Sizes (issue 20): no source file over [`FILE_LINES_MAX`] lines, no function over
//! [`FUNCTION_LINES_MAX`].
//!
//! The scan, in full:
//! - Files: every `.rs` file of the workspace below `game/` and `sim/`, but not test code:
//!   nothing under a `tests/`, `benches/` or `examples/` folder, and no file a `#[cfg(test)]`
//!   module declaration names (`#[cfg(test)] #[path = "x_tests.rs"] mod tests;`). A file's
//!   size is all its lines, a `#[cfg(test)] mod tests { … }` inside it included (the file is
//!   what a reader opens).
//! - Functions: parsed with `syn`; every free function, method and trait method with a body,
//!   nested ones too, except `#[test]` functions and anything inside a `#[cfg(test)]` module.
//!   A function's length runs from the line of its `fn` to the line of its closing brace
//!   (doc comments and attributes not counted).
//!
//! The known debt: files and functions over the limits today, each listed by name below.
//! Other engineers split their own files today, so the lists only shrink: the test fails on
//! any file or function over a limit that is not listed, and on a listed one that is no
//! longer over (take it off the list).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

const FILE_LINES_MAX: usize = 600;
const FUNCTION_LINES_MAX: usize = 120;

/// Files still over [`FILE_LINES_MAX`] lines (paths from the workspace root).
const FILES_OVER: &[&str] = &[
    // KNOWN-DEBT-FILES
];

/// Functions still over [`FUNCTION_LINES_MAX`] lines: (file, `Type::function` or `function`).
const FUNCTIONS_OVER: &[(&str, &str)] = &[
    // KNOWN-DEBT-FUNCTIONS
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("sim/ sits in the workspace")
        .to_path_buf()
}

/// Every `.rs` file below `folder`, skipping build output and test, bench and example folders.
fn rust_files(folder: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", folder.display()))
        .map(|entry| entry.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        if path.is_dir() {
            if !matches!(name, "target" | "tests" | "benches" | "examples" | "node_modules") && !name.starts_with('.') {
                rust_files(&path, files);
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
}

fn is_cfg_test(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("cfg")
            && attribute
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

fn is_test_function(attributes: &[syn::Attribute]) -> bool {
    attributes.iter().any(|attribute| {
        attribute.path().is_ident("test")
            || attribute
                .path()
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "test")
    })
}

/// What one file holds: its functions over the limit, and the files its `#[cfg(test)]`
/// module declarations name.
#[derive(Default)]
struct Scan {
    file: PathBuf,
    /// Where `mod x;` in this file looks for `x`: the file's folder for `mod.rs`, `lib.rs`
    /// and `main.rs`, else a folder named after the file.
    module_folder: PathBuf,
    impl_of: Vec<String>,
    long_functions: Vec<(String, usize)>,
    test_files: Vec<PathBuf>,
}

impl Scan {
    fn function(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let lines = block.brace_token.span.close().end().line - fn_token.span.start().line + 1;
        if lines > FUNCTION_LINES_MAX {
            let name = match self.impl_of.last() {
                Some(owner) => format!("{owner}::{name}"),
                None => name.to_string(),
            };
            self.long_functions.push((name, lines));
        }
    }
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if is_cfg_test(&module.attrs) {
            if module.content.is_none() {
                let path_attribute = module.attrs.iter().find_map(|attribute| match &attribute.meta {
                    syn::Meta::NameValue(pair) if pair.path.is_ident("path") => match &pair.value {
                        syn::Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Str(text),
                            ..
                        }) => Some(text.value()),
                        _ => None,
                    },
                    _ => None,
                });
                let folder = self.file.parent().expect("a file has a folder");
                match path_attribute {
                    Some(path) => self.test_files.push(folder.join(path)),
                    None => {
                        let name = module.ident.to_string();
                        self.test_files.push(self.module_folder.join(format!("{name}.rs")));
                        self.test_files.push(self.module_folder.join(name).join("mod.rs"));
                    }
                }
            }
            return;
        }
        syn::visit::visit_item_mod(self, module);
    }

    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        if is_test_function(&function.attrs) || is_cfg_test(&function.attrs) {
            return;
        }
        self.function(&function.sig.ident, &function.sig.fn_token, &function.block);
        syn::visit::visit_item_fn(self, function);
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_cfg_test(&item.attrs) {
            return;
        }
        let owner = match &*item.self_ty {
            syn::Type::Path(path) => path
                .path
                .segments
                .last()
                .map_or_else(|| "impl".to_owned(), |segment| segment.ident.to_string()),
            other => format!("impl at line {}", other.span().start().line),
        };
        self.impl_of.push(owner);
        syn::visit::visit_item_impl(self, item);
        self.impl_of.pop();
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        if is_test_function(&function.attrs) || is_cfg_test(&function.attrs) {
            return;
        }
        self.function(&function.sig.ident, &function.sig.fn_token, &function.block);
        syn::visit::visit_impl_item_fn(self, function);
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        self.impl_of.push(item.ident.to_string());
        syn::visit::visit_item_trait(self, item);
        self.impl_of.pop();
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if let Some(block) = &function.default {
            self.function(&function.sig.ident, &function.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, function);
    }
}

/// What is over the limits now: files with their line counts, functions with theirs.
struct Sizes {
    files_over: Vec<(String, usize)>,
    functions_over: Vec<(String, String, usize)>,
}

fn measure() -> Sizes {
    let root = workspace_root();
    let mut files = Vec::new();
    for folder in ["game", "sim"] {
        rust_files(&root.join(folder), &mut files);
    }
    assert!(
        files.len() > 100,
        "the scan found only {} files below {}",
        files.len(),
        root.display()
    );
    let mut scans = Vec::new();
    let mut test_files = BTreeSet::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("cannot read {}: {error}", file.display()));
        let parsed = syn::parse_file(&text).unwrap_or_else(|error| {
            panic!(
                "{}:{}: does not parse: {error}",
                file.display(),
                error.span().start().line
            )
        });
        let name = file.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        let folder = file.parent().expect("a file has a folder");
        let module_folder = if matches!(name, "mod.rs" | "lib.rs" | "main.rs") {
            folder.to_path_buf()
        } else {
            folder.join(name.trim_end_matches(".rs"))
        };
        let mut scan = Scan {
            file: file.clone(),
            module_folder,
            ..Scan::default()
        };
        scan.visit_file(&parsed);
        test_files.extend(scan.test_files.drain(..));
        scans.push((scan, text.lines().count()));
    }
    let relative = |path: &Path| {
        path.strip_prefix(&root)
            .expect("below the root")
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut sizes = Sizes {
        files_over: Vec::new(),
        functions_over: Vec::new(),
    };
    for (scan, lines) in scans {
        if test_files.contains(&scan.file) {
            continue;
        }
        let file = relative(&scan.file);
        if lines > FILE_LINES_MAX {
            sizes.files_over.push((file.clone(), lines));
        }
        for (function, lines) in scan.long_functions {
            sizes.functions_over.push((file.clone(), function, lines));
        }
    }
    sizes
}

#[test]
fn no_file_or_function_over_the_limits_beyond_the_known_debt() {
    let sizes = measure();
    let mut problems = Vec::new();
    let listed_files: BTreeSet<&str> = FILES_OVER.iter().copied().collect();
    let over_files: BTreeSet<&str> = sizes.files_over.iter().map(|(file, _)| file.as_str()).collect();
    for (file, lines) in &sizes.files_over {
        if !listed_files.contains(file.as_str()) {
            problems.push(format!(
                "{file}: {lines} lines, over {FILE_LINES_MAX}: split it by job (not on the known-debt list)"
            ));
        }
    }
    for file in listed_files.difference(&over_files) {
        problems.push(format!(
            "{file} is on FILES_OVER but no longer over {FILE_LINES_MAX} lines (or gone): take it off the list"
        ));
    }
    let listed_functions: BTreeSet<(&str, &str)> = FUNCTIONS_OVER.iter().copied().collect();
    let over_functions: BTreeSet<(&str, &str)> = sizes
        .functions_over
        .iter()
        .map(|(file, function, _)| (file.as_str(), function.as_str()))
        .collect();
    for (file, function, lines) in &sizes.functions_over {
        if !listed_functions.contains(&(file.as_str(), function.as_str())) {
            problems.push(format!(
                "{file}: fn {function} is {lines} lines, over {FUNCTION_LINES_MAX}: split it (not on the known-debt list)"
            ));
        }
    }
    for (file, function) in listed_functions.difference(&over_functions) {
        problems.push(format!(
            "{file}: fn {function} is on FUNCTIONS_OVER but no longer over {FUNCTION_LINES_MAX} lines (or gone): take it off the list"
        ));
    }
    assert!(problems.is_empty(), "sizes:\n{}", problems.join("\n"));
}

/// The scan itself: it must see a long function, skip tests, and name methods by their type.
#[test]
fn the_scan_counts_functions_from_fn_to_closing_brace_and_skips_tests() {
    let body = "    let x = 1;\n".repeat(FUNCTION_LINES_MAX);
    let text = format!(
        "/// doc\n#[inline]\nfn long() {{\n{body}}}\nstruct S;\nimpl S {{\n    fn method() {{\n{body}    }}\n}}\n#[test]\nfn long_test() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn helper() {{\n{body}    }}\n}}\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod more;\n"
    );
    let parsed = syn::parse_file(&text).expect("parses");
    let mut scan = Scan {
        file: PathBuf::from("/w/src/x.rs"),
        module_folder: PathBuf::from("/w/src/x"),
        ..Scan::default()
    };
    scan.visit_file(&parsed);
    assert_eq!(
        scan.long_functions,
        vec![
            ("long".to_owned(), FUNCTION_LINES_MAX + 2),
            ("S::method".to_owned(), FUNCTION_LINES_MAX + 2)
        ]
    );
    assert_eq!(scan.test_files, vec![PathBuf::from("/w/src/x_tests.rs")]);
}
