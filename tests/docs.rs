//! Every command that README.md, CONTRIBUTING.md and docs/ tell a reader to type must exist:
//! the binary's subcommands and flags (checked against its own clap definition), the test
//! and bench targets `cargo` is pointed at, and every file of the repository a command names.
//! Prose drifts when code moves; this test is what notices.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use gpucloud_operator::cli::Cli;
use gpucloud_operator::plugin::PluginCli;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages a reader follows.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md"), repo().join("CONTRIBUTING.md")];
    let mut dirs = vec![repo().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("docs/ is readable") {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The shell lines of a page: fenced `sh`/`bash`/`console` blocks and four-space indented
/// blocks, continuation lines joined, plus inline code that starts with a command name.
fn command_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut fence: Option<bool> = None;
    let mut pending = String::new();
    let push = |lines: &mut Vec<String>, line: &str, pending: &mut String| {
        let line = line.trim();
        if let Some(start) = line.strip_suffix('\\') {
            pending.push_str(start);
            pending.push(' ');
        } else {
            pending.push_str(line);
            lines.push(std::mem::take(pending));
        }
    };
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(matches!(info.trim(), "sh" | "bash" | "console" | "shell")),
            };
            continue;
        }
        match fence {
            Some(true) => push(&mut lines, line, &mut pending),
            Some(false) => {}
            None if line.starts_with("    ") && !trimmed.starts_with(['-', '|', '*']) => {
                push(&mut lines, line, &mut pending)
            }
            None => {
                for (i, span) in line.split('`').enumerate() {
                    let is_code = i % 2 == 1;
                    if is_code && is_command(span) {
                        lines.push(span.to_string());
                    }
                }
            }
        }
    }
    lines
}

fn is_command(text: &str) -> bool {
    [
        "gpucloud-operator ",
        "kubectl gpucloud ",
        "cargo ",
        "scripts/",
        "tests/control-plane/cp.sh",
    ]
    .iter()
    .any(|p| text.starts_with(p))
}

/// The simple commands of a line: split at pipes, `&&`, `;` and command substitutions, with
/// comments, environment assignments and `eval` left off.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let line = line.split(" #").next().unwrap_or_default();
    if line.trim_start().starts_with('#') {
        return Vec::new();
    }
    let line = line
        .replace("$(", " ; ")
        .replace("&&", " ; ")
        .replace('|', " ; ");
    let Some(words) = shlex::split(&line) else {
        return Vec::new();
    };
    words
        .split(|w| w == ";" || w.ends_with(';'))
        .map(|command| {
            command
                .iter()
                .map(|w| w.trim_end_matches([')', '"', '&']).to_string())
                .skip_while(|w| {
                    w.contains('=') && !w.starts_with('-') || w == "eval" || w == "nice"
                })
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// What is wrong with one simple command, if anything.
fn check(command: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    let program = command[0].as_str();
    let binary_args = if program.ends_with("gpucloud-operator") {
        Some(&command[1..])
    } else if command.len() > 2 && program == "cargo" && command[1] == "run" {
        command
            .iter()
            .position(|w| w == "--")
            .map(|i| &command[i + 1..])
    } else {
        None
    };
    if let Some(args) = binary_args {
        problems.extend(check_binary(Cli::command(), args));
    }
    if program == "kubectl" && command.get(1).is_some_and(|w| w == "gpucloud") {
        problems.extend(check_binary(PluginCli::command(), &command[2..]));
    }
    if program == "cargo" {
        problems.extend(check_cargo(command));
    }
    for word in command {
        if let Some(path) = repo_path(word)
            && !repo().join(path).exists()
        {
            problems.push(format!("{path} does not exist"));
        }
    }
    problems
}

/// Walks the subcommands named in `args` and checks every `--flag` against the subcommand
/// reached (and the flags its parents make global).
fn check_binary(root: clap::Command, args: &[String]) -> Vec<String> {
    let mut chain = vec![root.clone()];
    let mut problems = Vec::new();
    // `[--flag VALUE]` in a synopsis is the flag.
    let args: Vec<&str> = args.iter().map(|a| a.trim_matches(['[', ']'])).collect();
    for arg in args.iter().copied() {
        let current = chain.last().unwrap().clone();
        if let Some(flag) = arg.strip_prefix("--") {
            let name = flag.split('=').next().unwrap_or_default();
            let known = name == "help"
                || name == "version"
                || chain.iter().enumerate().any(|(depth, c)| {
                    let here = depth + 1 == chain.len();
                    c.get_arguments()
                        .any(|a| a.get_long() == Some(name) && (here || a.is_global_set()))
                });
            if !known {
                problems.push(format!("`{}` has no flag --{name}", current.get_name()));
            }
        } else if !arg.starts_with('-')
            && let Some(sub) = current.find_subcommand(arg)
        {
            chain.push(sub.clone());
        }
    }
    if chain.len() == 1 && !args.is_empty() && !args[0].starts_with('-') {
        problems.push(format!("{} has no subcommand {}", root.get_name(), args[0]));
    }
    problems
}

/// `--test NAME`, `--bench NAME` and `-p CRATE` name targets that exist: a test of the crate
/// `-p` names is in its `tests/`, any other in the root package's.
fn check_cargo(command: &[String]) -> Vec<String> {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let package = command
        .windows(2)
        .find(|pair| pair[0] == "-p" || pair[0] == "--package")
        .map(|pair| pair[1].as_str())
        .filter(|package| *package != "gpucloud-operator");
    let tests = match package {
        Some(package) => repo()
            .join("crates")
            .join(package.trim_start_matches("gpucloud-"))
            .join("tests"),
        None => repo().join("tests"),
    };
    let mut problems = Vec::new();
    for pair in command.windows(2) {
        let (flag, value) = (pair[0].as_str(), pair[1].as_str());
        let exists = match flag {
            "--test" => tests.join(format!("{value}.rs")).exists(),
            "--bench" => manifest.contains(&format!("name = \"{value}\"")),
            "-p" | "--package" => {
                value == "gpucloud-operator"
                    || repo()
                        .join("crates")
                        .join(value.trim_start_matches("gpucloud-"))
                        .exists()
            }
            _ => true,
        };
        if !exists {
            problems.push(format!("cargo {flag} {value}: no such target"));
        }
    }
    problems
}

/// A word that names a file of this repository (placeholders such as `examples/FILE` and
/// globs are not names).
fn repo_path(word: &str) -> Option<&str> {
    const ROOTS: [&str; 9] = [
        "scripts/",
        "tests/",
        "deploy/",
        "examples/",
        "crds/",
        "docs/",
        "crates/",
        "benches/",
        ".ci/",
    ];
    let word = word
        .trim_start_matches("./")
        .trim_end_matches([',', '.', ':']);
    let is_placeholder =
        |part: &str| part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    (ROOTS.iter().any(|r| word.starts_with(r))
        && !word.contains(['*', '$', '<', '{'])
        && !word.split(['/', '.']).any(is_placeholder))
    .then_some(word)
}

#[test]
fn every_command_in_the_docs_exists() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page
            .strip_prefix(repo())
            .unwrap_or(&page)
            .display()
            .to_string();
        for line in command_lines(&text) {
            for command in simple_commands(&line) {
                checked += 1;
                for problem in check(&command) {
                    problems.push(format!("{name}: `{line}`: {problem}"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} commands found: the parser lost them"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_catches_what_drifts() {
    let words = |s: &str| simple_commands(s).remove(0);
    assert!(check(&words("gpucloud-operator crds --reference")).is_empty());
    assert!(check(&words("cargo run -- demo --until-ready --timeout 5m")).is_empty());
    assert!(!check(&words("gpucloud-operator crds --nope")).is_empty());
    assert!(!check(&words("gpucloud-operator launch")).is_empty());
    assert!(check(&words("kubectl gpucloud cost [--since 30d] [-n NS]")).is_empty());
    assert!(!check(&words("kubectl gpucloud cost --until 1d")).is_empty());
    assert!(!check(&words("kubectl gpucloud top")).is_empty());
    assert!(!check(&words("cargo test --test no_such_suite")).is_empty());
    assert!(!check(&words("kubectl apply -k deploy/no-such-overlay")).is_empty());
    assert!(check(&words("kubectl apply -n NAMESPACE -f examples/FILE")).is_empty());
    let piped = simple_commands("target/debug/gpucloud-operator crds | kubectl apply -f -");
    assert_eq!(piped.len(), 2, "{piped:?}");
    assert!(Path::new(&repo()).join("README.md").exists());
}

/// The `BENCH_*` variables `text` names.
fn bench_variables(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("BENCH_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        found.insert(name.trim_end_matches('_').to_string());
    }
    found
}

/// A figure the docs quote comes with the benchmark command that measures it: every
/// variable such a command sets must be one a benchmark reads, or the figure was measured
/// by code that is gone.
#[test]
fn every_benchmark_variable_in_the_docs_is_read_by_a_benchmark() {
    let mut code = String::new();
    for dir in ["benches", "benches/support"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "rs") {
                code.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
    }
    let read = bench_variables(&code);
    let mut problems = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for name in bench_variables(&text) {
            if !read.contains(&name) {
                problems.push(format!(
                    "{}: {name} is read by no benchmark",
                    page.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        read.contains("BENCH_OBJECTS"),
        "the scan of benches/ found nothing"
    );
}
