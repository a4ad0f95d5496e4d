//! A test that applies to one backend only is named for it (`v2_only_*`, `seed_only_*`),
//! so that each lane of `scripts/test.sh` leaves it out by name and says how many it left
//! out; and it fails on the wrong backend (`common::backend::require`) rather than
//! returning early and reporting `ok` for a test that checked nothing.

use std::fs;
use std::path::PathBuf;

fn suites() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            (name.starts_with("e2e_") && name.ends_with(".rs")).then_some(name)
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = fs::read_to_string(dir.join(&f)).unwrap();
            (f, text)
        })
        .collect()
}

/// Each `async fn NAME()` of `text` (a test takes no arguments) with the text of its first
/// three lines.
fn tests_of(text: &str) -> Vec<(&str, String)> {
    let mut found = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("async fn ") else {
            continue;
        };
        let Some(name) = rest.strip_suffix("() {") else {
            continue;
        };
        let head = lines[i + 1..lines.len().min(i + 4)].join("\n");
        found.push((name, head));
    }
    found
}

/// The backend a test's first lines require, if any.
fn required(head: &str) -> Option<&'static str> {
    ["v2", "seed"]
        .into_iter()
        .find(|b| head.contains(&format!("common::backend::require(\"{b}\")")))
}

/// Whether `text` has a branch on the backend that only prints or returns: a test that
/// reports `ok` having checked nothing on that backend.
fn empty_backend_branches(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if !(t.starts_with("if ") && t.contains("is_v2()") && t.ends_with('{')) {
            continue;
        }
        let body: Vec<&str> = lines[i + 1..]
            .iter()
            .map(|l| l.trim())
            .take_while(|l| *l != "}")
            .collect();
        let empty = body
            .iter()
            .all(|l| l.starts_with("println!") || *l == "return;" || l.starts_with("\""));
        if empty && body.contains(&"return;") {
            found.push(i + 1);
        }
    }
    found
}

#[test]
fn backend_only_tests_are_named_for_their_backend_and_require_it() {
    let mut problems = Vec::new();
    let mut counted = 0;
    for (file, text) in suites() {
        for (name, head) in tests_of(&text) {
            let named = ["v2", "seed"]
                .into_iter()
                .find(|b| name.starts_with(&format!("{b}_only_")));
            let wants = required(&head);
            if named.is_some() || wants.is_some() {
                counted += 1;
            }
            if named != wants {
                problems.push(format!(
                    "{file}: {name} is named for {named:?} but its first lines require {wants:?}"
                ));
            }
        }
        for line in empty_backend_branches(&text) {
            problems.push(format!(
                "{file}:{line}: a branch on the backend that returns having checked nothing; \
                 name the test v2_only_/seed_only_ and call common::backend::require"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        counted > 0,
        "no backend-only test found: did the naming change?"
    );
}

#[test]
fn the_checks_see_a_mismatch_and_an_empty_branch() {
    let text = "async fn v2_only_a() {\n    let x = 1;\n}\n\
                async fn b() {\n    common::backend::require(\"seed\");\n}\n\
                async fn c() {\n    if !common::backend::is_v2() {\n        println!(\"no\");\n        return;\n    }\n}\n";
    let tests = tests_of(text);
    assert_eq!(tests.len(), 3);
    assert_eq!(required(&tests[0].1), None);
    assert_eq!(required(&tests[1].1), Some("seed"));
    assert_eq!(empty_backend_branches(text), vec![8]);
}
