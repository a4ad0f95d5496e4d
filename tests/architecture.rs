//! The structure the compiler does not enforce by itself, checked from the sources (see
//! docs/architecture.md):
//! - the crates depend on each other one way only, as the layers say;
//! - no import circle between the modules of any crate;
//! - a kind's folder imports no other kind's folder, and nothing above the kinds;
//! - no source file over 800 lines, no function over 120 lines in the engine.
//!
//! An edge is a path a module names through `crate::`, `super::` or `self::` (in `use`
//! items and in code), outside comments, strings and `#[cfg(test)]` items. A module's
//! edges to its own descendants are not counted: a parent is made of its children. A path
//! to a name a module only imported (`super::X` where the parent has `use b::X`) is an edge
//! to where the name came from.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 800;
const MAX_ENGINE_FN_LINES: usize = 120;

/// The library crates and the workspace crates each may use. The binary package may use
/// them all.
const LAYERS: &[(&str, &[&str])] = &[
    ("platform", &[]),
    ("emulator", &[]),
    ("crd", &[]),
    ("engine", &["gpucloud-crd", "gpucloud-platform"]),
    (
        "policy",
        &["gpucloud-crd", "gpucloud-engine", "gpucloud-platform"],
    ),
];

/// Crates that must know nothing of Kubernetes.
const NO_KUBERNETES: &[&str] = &["platform", "emulator"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The source with comments, string and char literals blanked out (lines kept), so that
/// what is left is code only.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' && char_literal_len(rest).is_some() {
            let len = char_literal_len(rest).unwrap();
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            let ch = src[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) at the start.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = start + hashes + 1;
    let end = s[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(body + end + close.len())
}

/// The length of a char literal at the start (`'a'`, `'\n'`, `'\''`), `None` for a
/// lifetime.
fn char_literal_len(s: &[u8]) -> Option<usize> {
    if s.get(1) == Some(&b'\\') {
        let end = s[2..].iter().position(|&c| c == b'\'')?;
        return Some(end + 3);
    }
    let ch = std::str::from_utf8(&s[1..s.len().min(6)])
        .ok()
        .or_else(|| {
            (2..6)
                .rev()
                .find_map(|n| std::str::from_utf8(&s[1..s.len().min(n)]).ok())
        })?;
    let c = ch.chars().next()?;
    (s.get(1 + c.len_utf8()) == Some(&b'\'')).then_some(c.len_utf8() + 2)
}

/// The byte index just past the block that opens at the first `{` at or after `from`.
fn block_end(code: &str, from: usize) -> usize {
    let b = code.as_bytes();
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(from) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// `code` without its `#[cfg(test)]` items, and the names of the `mod x;` it declares
/// test-only (their files are tests too).
fn without_tests(code: &str) -> (String, Vec<String>) {
    let mut out = code.to_string();
    let mut test_mods = Vec::new();
    while let Some(at) = out.find("#[cfg(test)]") {
        let after = at + "#[cfg(test)]".len();
        let item = out[after..].trim_start();
        let item_at = out.len() - item.len();
        let semicolon = item.find(';').unwrap_or(item.len());
        let brace = item.find('{').unwrap_or(item.len());
        let end = if semicolon < brace {
            let decl = item[..semicolon].trim();
            if let Some(name) = decl.strip_prefix("mod ").or(decl.strip_prefix("pub mod ")) {
                test_mods.push(name.trim().to_string());
            }
            item_at + semicolon + 1
        } else {
            block_end(&out, item_at)
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
    }
    (out, test_mods)
}

/// The module path of `file` in the crate whose sources are in `src`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths named from `at` on (after `crate::`, `super::` or `self::`), with use groups
/// expanded: `a::{b, c::d}` gives `a::b` and `a::c::d`.
fn paths_at(code: &str, at: usize) -> Vec<Vec<String>> {
    fn parse(code: &[char], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix;
        loop {
            while *i < code.len() && code[*i].is_whitespace() {
                *i += 1;
            }
            if *i < code.len() && code[*i] == '{' {
                *i += 1;
                loop {
                    parse(code, i, path.clone(), out);
                    while *i < code.len() && code[*i].is_whitespace() {
                        *i += 1;
                    }
                    match code.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    while *i < code.len() && code[*i].is_whitespace() {
                        *i += 1;
                    }
                    if code.get(*i) == Some(&'}') {
                        *i += 1;
                        return;
                    }
                }
            }
            let start = *i;
            while *i < code.len() && is_ident(code[*i]) {
                *i += 1;
            }
            if *i == start {
                break;
            }
            path.push(code[start..*i].iter().collect());
            if code.get(*i) == Some(&':') && code.get(*i + 1) == Some(&':') {
                *i += 2;
            } else {
                break;
            }
        }
        out.push(path);
    }
    let chars: Vec<char> = code[at..].chars().take(2000).collect();
    let mut out = Vec::new();
    parse(&chars, &mut 0, Vec::new(), &mut out);
    out
}

/// One crate's modules: file → (module path, code without comments and tests).
struct Crate {
    files: BTreeMap<PathBuf, (Vec<String>, String)>,
}

/// The start of each `use` declaration in `code` (`use`, `pub use`, `pub(crate) use`...):
/// the offset of the path that follows the keyword.
fn use_paths(code: &str) -> Vec<usize> {
    code.match_indices("use ")
        .filter(|(at, _)| code[..*at].chars().next_back().is_none_or(|c| !is_ident(c)))
        .map(|(at, _)| at + 4)
        .collect()
}

impl Crate {
    fn read(src: &Path) -> Self {
        let mut files = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for file in rust_files(src) {
            let (code, test_mods) = without_tests(&code_only(&fs::read_to_string(&file).unwrap()));
            let module = module_of(src, &file);
            for name in test_mods {
                let mut m = module.clone();
                m.push(name);
                test_only.insert(m);
            }
            files.insert(file, (module, code));
        }
        files.retain(|file, (module, _)| {
            file.file_name().unwrap() != "main.rs"
                && !test_only.iter().any(|t| module.starts_with(t))
        });
        Crate { files }
    }

    fn file_of(&self, module: &[String]) -> Option<&PathBuf> {
        self.files
            .iter()
            .find(|(_, (m, _))| m == module)
            .map(|(f, _)| f)
    }

    /// The names each module brings in with `use` from a module of this crate, and the
    /// full path each stands for: `super::X` in a child names what the parent imported, so
    /// a path through a parent's `use decide::X` (or `pub use`) leads to `decide`.
    fn imports(&self) -> BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> {
        let mut out: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for (module, code) in self.files.values() {
            for at in use_paths(code) {
                for mut path in paths_at(code, at) {
                    if path.last().map(String::as_str) == Some("self") {
                        path.pop();
                    }
                    let Some(first) = path.first().cloned() else {
                        continue;
                    };
                    let mut full = match first.as_str() {
                        "crate" => Vec::new(),
                        "self" | "super" => module.clone(),
                        _ => {
                            let mut child = module.clone();
                            child.push(first.clone());
                            if self.file_of(&child).is_none() {
                                continue; // another crate, std or a name in scope
                            }
                            module.clone()
                        }
                    };
                    let mut rest = path.as_slice();
                    if first == "crate" || first == "self" {
                        rest = &rest[1..];
                    }
                    while rest.first().map(String::as_str) == Some("super") {
                        full.pop();
                        rest = &rest[1..];
                    }
                    full.extend(rest.iter().cloned());
                    if let Some(name) = full.last().cloned() {
                        out.entry(module.clone()).or_default().insert(name, full);
                    }
                }
            }
        }
        out
    }

    /// The file `full` names, following the imports of the modules it goes through: the
    /// longest module prefix that is a file, then the item after it, if that module only
    /// imported it, to where it came from. With the length of the module path found.
    fn resolve(
        &self,
        imports: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
        mut full: Vec<String>,
    ) -> Option<(Vec<String>, &PathBuf)> {
        for _ in 0..8 {
            let (n, file) = (0..=full.len())
                .rev()
                .find_map(|n| self.file_of(&full[..n]).map(|f| (n, f)))?;
            let imported = full
                .get(n)
                .and_then(|name| imports.get(&full[..n])?.get(name))
                .filter(|to| **to != full[..=n]);
            match imported {
                Some(to) => {
                    let mut next = to.clone();
                    next.extend(full[n + 1..].iter().cloned());
                    full = next;
                }
                None => return Some((full[..n].to_vec(), file)),
            }
        }
        None
    }

    /// The files each file imports (not counting its own descendants).
    fn edges(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let imports = self.imports();
        let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (file, (module, code)) in &self.files {
            let mut targets = BTreeSet::new();
            for (at, _) in code.match_indices("::") {
                let head_start = code[..at]
                    .rfind(|c: char| !is_ident(c))
                    .map_or(0, |i| i + 1);
                let head = &code[head_start..at];
                let before = code[..head_start].chars().next_back();
                if before == Some(':') || before == Some('$') {
                    continue;
                }
                let mut base: Vec<String> = match head {
                    "crate" => Vec::new(),
                    "self" => module.clone(),
                    "super" => {
                        let mut m = module.clone();
                        m.pop();
                        m
                    }
                    _ => continue,
                };
                for mut path in paths_at(code, at + 2) {
                    while path.first().map(String::as_str) == Some("super") {
                        path.remove(0);
                        base.pop();
                    }
                    let mut full = base.clone();
                    full.extend(path);
                    if let Some((found, target)) = self.resolve(&imports, full)
                        && target != file
                        && !(found.starts_with(module) && found.len() > module.len())
                    {
                        targets.insert(target.clone());
                    }
                }
            }
            edges.insert(file.clone(), targets);
        }
        edges
    }
}

/// The strongly connected components with more than one file (Tarjan).
fn circles(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every crate of the workspace: (name, its sources).
fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![("gpucloud-operator".to_string(), root().join("src"))];
    for (name, _) in LAYERS {
        out.push((
            format!("gpucloud-{name}"),
            root().join("crates").join(name).join("src"),
        ));
    }
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The names in the `[dependencies]` table of a Cargo.toml.
fn dependencies(manifest: &Path) -> Vec<String> {
    let text = fs::read_to_string(manifest).unwrap();
    let mut in_deps = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap().trim();
            out.push(name.to_string());
        }
    }
    out
}

#[test]
fn crates_depend_on_the_layers_below_them_only() {
    let listed: BTreeSet<String> = fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let known: BTreeSet<String> = LAYERS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        listed, known,
        "crates/ and LAYERS here must name the same crates"
    );
    let mut wrong = Vec::new();
    for (name, allowed) in LAYERS {
        for dep in dependencies(&root().join("crates").join(name).join("Cargo.toml")) {
            if dep.starts_with("gpucloud-") && !allowed.contains(&dep.as_str()) {
                wrong.push(format!(
                    "crates/{name} depends on {dep}, a layer it may not use"
                ));
            }
            if NO_KUBERNETES.contains(name) && (dep == "kube" || dep == "k8s-openapi") {
                wrong.push(format!(
                    "crates/{name} depends on {dep}: it must know nothing of Kubernetes"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut found = Vec::new();
    for (name, src) in crates() {
        for circle in circles(&Crate::read(&src).edges()) {
            let files: Vec<String> = circle.iter().map(|f| relative(f)).collect();
            found.push(format!("{name}: {}", files.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn a_kind_imports_no_other_kind_and_nothing_above_the_kinds() {
    let src = root().join("src");
    let kinds = src.join("kinds");
    let binary = Crate::read(&src);
    // The folders of the kinds, and what every kind may share.
    let shared = [kinds.join("shared"), kinds.join("summary.rs")];
    let above = [
        src.join("app"),
        src.join("cli"),
        src.join("demo"),
        kinds.join("mod.rs"),
    ];
    let folder_of = |file: &Path| -> Option<PathBuf> {
        let rel = file.strip_prefix(&kinds).ok()?;
        let first = rel.components().next()?;
        let folder = kinds.join(first);
        folder.is_dir().then_some(folder)
    };
    let mut wrong = Vec::new();
    for (file, targets) in binary.edges() {
        let Some(own) = folder_of(&file).filter(|f| !shared.contains(f)) else {
            continue;
        };
        for target in targets {
            let other_kind = folder_of(&target)
                .is_some_and(|f| f != own && !shared.iter().any(|s| target.starts_with(s)));
            let upward = above.iter().any(|a| target.starts_with(a));
            if other_kind || upward {
                wrong.push(format!("{} imports {}", relative(&file), relative(&target)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_source_file_is_over_800_lines() {
    let mut dirs: Vec<PathBuf> = crates().into_iter().map(|(_, src)| src).collect();
    dirs.extend([root().join("tests"), root().join("benches")]);
    // The crates' own suites.
    dirs.extend(
        LAYERS
            .iter()
            .map(|(name, _)| root().join("crates").join(name).join("tests"))
            .filter(|tests| tests.is_dir()),
    );
    let mut long = Vec::new();
    for dir in dirs {
        for file in rust_files(&dir) {
            let lines = fs::read_to_string(&file).unwrap().lines().count();
            if lines > MAX_FILE_LINES {
                long.push((relative(&file), lines));
            }
        }
    }
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines: {long:?}");
}

#[test]
fn no_engine_function_is_over_120_lines() {
    let mut long = Vec::new();
    for file in rust_files(&root().join("crates/engine/src")) {
        let code = code_only(&fs::read_to_string(&file).unwrap());
        let mut from = 0;
        while let Some(found) = code[from..].find("fn ") {
            let at = from + found;
            from = at + 3;
            if at > 0 && is_ident(code[..at].chars().next_back().unwrap()) {
                continue;
            }
            let name: String = code[at + 3..]
                .chars()
                .take_while(|&c| is_ident(c))
                .collect();
            let (Some(brace), semicolon) = (code[at..].find('{'), code[at..].find(';')) else {
                continue;
            };
            if semicolon.is_some_and(|s| s < brace) || name.is_empty() {
                continue;
            }
            let end = block_end(&code, at + brace);
            let lines = code[at..end].lines().count();
            if lines > MAX_ENGINE_FN_LINES {
                long.push((format!("{}: fn {name}", relative(&file)), lines));
            }
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_ENGINE_FN_LINES} lines: {long:?}"
    );
}

#[test]
fn the_checker_finds_a_circle_and_reads_use_groups() {
    // A circle through a use group, and an edge to a descendant that does not count.
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let crate_ = Crate {
        files: BTreeMap::from([
            (
                PathBuf::from("lib.rs"),
                (vec![], "pub use a::X;".to_string()),
            ),
            (
                a.clone(),
                (vec!["a".into()], "use crate::{b::Y, lib};".to_string()),
            ),
            (
                b.clone(),
                (
                    vec!["b".into()],
                    "fn f() { super::a::X::new(); }".to_string(),
                ),
            ),
        ]),
    };
    assert_eq!(circles(&crate_.edges()), vec![vec![a, b]]);
    let code = code_only("// crate::x::Y\nlet s = \"super::z\"; let c = '{'; r#\"crate::q\"#;");
    assert!(
        !code.contains("crate::") && !code.contains("super::"),
        "{code}"
    );
    let (code, mods) = without_tests(
        "fn a() {}\n#[cfg(test)]\nmod tests { use crate::x; }\n#[cfg(test)]\nmod more;",
    );
    assert!(!code.contains("crate::x"), "{code}");
    assert_eq!(mods, vec!["more".to_string()]);
}

#[test]
fn the_checker_follows_a_name_a_parent_imported() {
    // `a` names `super::Y`, which the parent only imported from `b`; `b` names `a`: a
    // circle between `a` and `b` that no path spells out.
    let parent = PathBuf::from("k/mod.rs");
    let a = PathBuf::from("k/a.rs");
    let b = PathBuf::from("k/b.rs");
    let crate_ = Crate {
        files: BTreeMap::from([
            (
                parent.clone(),
                (
                    vec!["k".into()],
                    "mod a;\nmod b;\npub use b::{Y, Z};".to_string(),
                ),
            ),
            (
                a.clone(),
                (vec!["k".into(), "a".into()], "use super::Y;".to_string()),
            ),
            (
                b.clone(),
                (
                    vec!["k".into(), "b".into()],
                    "fn f() -> super::a::X { todo!() }".to_string(),
                ),
            ),
        ]),
    };
    assert_eq!(circles(&crate_.edges()), vec![vec![a.clone(), b.clone()]]);
    // Named through the parent's own item, there is no circle.
    let mut no_import = crate_;
    no_import.files.get_mut(&parent).unwrap().1 = "mod a;\nmod b;\npub struct Y;".into();
    assert!(circles(&no_import.edges()).is_empty());
}
