//! Sizes (issue 20): no source file over [`FILE_LINES_MAX`] lines, no function over
//! [`FUNCTION_LINES_MAX`]; each offender is printed with its path and line count.
//!
//! What it counts:
//! - Files: every `.rs` file of the workspace below `game/` and `sim/` (sources, examples,
//!   benches, build scripts), but not test code: nothing under a `tests/` folder, no file a
//!   `#[cfg(test)]` module declaration names (`#[cfg(test)] #[path = "x_tests.rs"] mod tests;`),
//!   and not the lines of a `#[cfg(test)] mod … { … }` inside a file (from its first attribute
//!   to its closing brace). Everything else counts, blank lines and comments included.
//! - Functions: parsed with `syn`; every free function, method and trait method with a body,
//!   nested ones too, except `#[test]` functions and anything inside a `#[cfg(test)]` item.
//!   A function's length runs from the line of its `fn` to the line of its closing brace
//!   (doc comments and attributes not counted).
//!
//! There is no list of known exceptions: a file or function over a limit is split by its jobs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

#[path = "common/source_tree.rs"]
mod source_tree;

use source_tree::{files_below, workspace_root};

const FILE_LINES_MAX: usize = 600;
const FUNCTION_LINES_MAX: usize = 120;

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
    /// Lines of `#[cfg(test)]` modules written inside the file.
    test_lines: usize,
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
            } else if let Some((brace, _)) = &module.content {
                let first = module
                    .attrs
                    .first()
                    .map_or(module.mod_token.span.start().line, |attribute| {
                        attribute.pound_token.span.start().line
                    });
                self.test_lines += brace.span.close().end().line - first + 1;
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
        files_below(&root.join(folder), |name| name.ends_with(".rs"), &mut files);
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
        let lines = text.lines().count();
        assert!(
            scan.test_lines <= lines,
            "{}: more test lines than lines",
            file.display()
        );
        scans.push((scan, lines));
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
        let lines = lines - scan.test_lines;
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
fn no_file_over_600_lines_and_no_function_over_120() {
    let sizes = measure();
    let mut problems = Vec::new();
    for (file, lines) in &sizes.files_over {
        problems.push(format!(
            "{file}: {lines} lines (tests not counted), over {FILE_LINES_MAX}: split it by its jobs"
        ));
    }
    for (file, function, lines) in &sizes.functions_over {
        problems.push(format!(
            "{file}: fn {function} is {lines} lines, over {FUNCTION_LINES_MAX}: split it into named steps"
        ));
    }
    assert!(problems.is_empty(), "sizes:\n{}", problems.join("\n"));
}

/// The scan itself: it must see a long function, skip tests, and name methods by their type.
#[test]
fn the_scan_counts_functions_from_fn_to_closing_brace_and_skips_tests() {
    let body = "    let x = 1;\n".repeat(FUNCTION_LINES_MAX);
    // 120 lines from `fn` to its brace: at the limit, not over it.
    let fits = "    let x = 1;\n".repeat(FUNCTION_LINES_MAX - 2);
    let text = format!(
        "/// doc\n#[inline]\nfn long() {{\n{body}}}\nfn fits() {{\n{fits}}}\nstruct S;\nimpl S {{\n    fn method() {{\n{body}    }}\n}}\n#[test]\nfn long_test() {{\n{body}}}\n#[cfg(test)]\nmod tests {{\n    fn helper() {{\n{body}    }}\n}}\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod more;\n"
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
    // The inline test module, from `#[cfg(test)]` to its closing brace, is not the file's size.
    assert_eq!(scan.test_lines, FUNCTION_LINES_MAX + 5);
}
