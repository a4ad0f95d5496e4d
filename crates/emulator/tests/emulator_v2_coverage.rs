//! Every operation of the published REST v2 document (our stripped copy,
//! `tests/fixtures/platform-rest-v2.openapi.json`) is either served by the emulator or
//! deliberately not served: listed with its reason in `tests/v2-conformance/not-served.txt`
//! and in the README table "REST v2 operations not served". Nothing listed there may be
//! served, or schemathesis (`tests/v2-conformance/run.sh`, which skips the list) would leave
//! a served operation untested.
//!
//! "Served" means a request with the documented method and dummy ids reaches a handler: the
//! emulator answers unrouted requests 404 "no route for ..." and known paths with another
//! method 405, while a handler answers an unknown id with its own 404.

mod common;

use std::collections::BTreeMap;

use common::{KEY, start_default};
use reqwest::Method;
use serde_json::{Value, json};

const DOCUMENT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/platform-rest-v2.openapi.json"
));
const NOT_SERVED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/v2-conformance/not-served.txt"
));
const EMULATOR_README: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"));
const CONFORMANCE_README: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/v2-conformance/README.md"
));
/// Where the emulator README may point to for the table instead of holding it.
const CONFORMANCE_README_LINK: &str = "tests/v2-conformance/README.md";
const TABLE_HEADING: &str = "REST v2 operations not served";
/// Stands for every path parameter: no record has this id.
const DUMMY_ID: &str = "v2-coverage-no-such-id";

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Operation {
    method: String,
    path: String,
    id: String,
}

impl Operation {
    fn label(&self) -> String {
        format!("{} {} ({})", self.method.to_uppercase(), self.path, self.id)
    }
}

/// The document's operations, in its path order.
fn operations(document: &Value) -> Vec<Operation> {
    let paths = document["paths"]
        .as_object()
        .expect("the document has paths");
    let mut out = Vec::new();
    for (path, item) in paths {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let id = op["operationId"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
                out.push(Operation {
                    method: method.into(),
                    path: path.clone(),
                    id: id.into(),
                });
            }
        }
    }
    out
}

/// `/v2/pods/{id}` → `/v2/pods/v2-coverage-no-such-id`.
fn concrete_path(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|c| open + c)
            .unwrap_or_else(|| panic!("unclosed parameter in {template}"));
        out.push_str(&rest[..open]);
        out.push_str(DUMMY_ID);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `operationId<TAB>reason` lines; `#` comments and blank lines are skipped.
fn parse_not_served(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (id, reason) = line
            .split_once('\t')
            .ok_or_else(|| format!("line {}: expected operationId<TAB>reason", n + 1))?;
        let (id, reason) = (id.trim(), reason.trim());
        if id.is_empty() || reason.is_empty() {
            return Err(format!("line {}: empty operationId or reason", n + 1));
        }
        if out.insert(id.to_string(), reason.to_string()).is_some() {
            return Err(format!("line {}: {id} is listed twice", n + 1));
        }
    }
    Ok(out)
}

/// The lines of the Markdown section whose heading is `heading`, up to the next heading of
/// the same or a higher level; None when there is no such section.
fn section<'a>(markdown: &'a str, heading: &str) -> Option<Vec<&'a str>> {
    let mut lines = markdown.lines();
    let level = lines.by_ref().find_map(|line| {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        (hashes > 0 && line[hashes..].trim() == heading).then_some(hashes)
    })?;
    Some(
        lines
            .take_while(|line| {
                let hashes = line.chars().take_while(|&c| c == '#').count();
                hashes == 0 || hashes > level
            })
            .collect(),
    )
}

/// Table rows `| `operationId` | reason |` of a section.
fn table_rows(lines: &[&str]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().strip_prefix('|')?.split('|').collect();
            let id = cells.first()?.trim().strip_prefix('`')?.strip_suffix('`')?;
            Some((id.to_string(), cells.get(1)?.trim().to_string()))
        })
        .collect()
}

/// The table "REST v2 operations not served": in the emulator README, or in the
/// conformance README when the emulator README's section points there.
fn documented_not_served(
    emulator_readme: &str,
    conformance_readme: &str,
) -> Result<BTreeMap<String, String>, String> {
    let own = section(emulator_readme, TABLE_HEADING)
        .ok_or_else(|| format!("crates/emulator/README.md has no section \"{TABLE_HEADING}\""))?;
    let mut rows = table_rows(&own);
    if own.iter().any(|l| l.contains(CONFORMANCE_README_LINK)) {
        let theirs = section(conformance_readme, TABLE_HEADING).ok_or_else(|| {
            format!("{CONFORMANCE_README_LINK} has no section \"{TABLE_HEADING}\"")
        })?;
        rows.extend(table_rows(&theirs));
    }
    Ok(rows)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The router's fallback answered: no route has this path.
    NoRoute,
    /// The path is routed, but not for this method.
    MethodNotAllowed,
    /// A handler answered (whatever it answered).
    Handler,
}

fn reach(status: u16, body: &Value) -> Reach {
    let detail = body["detail"].as_str().unwrap_or_default();
    match status {
        404 if detail.starts_with("no route for ") => Reach::NoRoute,
        405 => Reach::MethodNotAllowed,
        _ => Reach::Handler,
    }
}

/// Everything that is wrong, one line each; empty when the document is covered.
fn coverage_problems(
    operations: &[Operation],
    reached: &BTreeMap<String, Reach>,
    not_served: &BTreeMap<String, String>,
    documented: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for op in operations {
        let served = reached.get(&op.id) == Some(&Reach::Handler);
        match (served, not_served.get(&op.id)) {
            (true, Some(_)) => problems.push(format!(
                "{}: served, yet listed as not served (schemathesis skips it)",
                op.label()
            )),
            (false, None) => problems.push(format!(
                "{}: not served ({}) and not in tests/v2-conformance/not-served.txt",
                op.label(),
                match reached.get(&op.id) {
                    Some(Reach::MethodNotAllowed) => "405: the path has no such method",
                    _ => "404: no route for the path",
                }
            )),
            (false, Some(reason)) => match documented.get(&op.id) {
                None => problems.push(format!(
                    "{}: not served, but missing from the table \"{TABLE_HEADING}\"",
                    op.label()
                )),
                Some(doc) if doc != reason => problems.push(format!(
                    "{}: the table says \"{doc}\", not-served.txt says \"{reason}\"",
                    op.label()
                )),
                Some(_) => {}
            },
            (true, None) => {}
        }
    }
    let known: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
    for id in not_served.keys() {
        if !known.contains(&id.as_str()) {
            problems.push(format!(
                "{id}: in not-served.txt but not an operation of the document"
            ));
        }
    }
    for id in documented.keys() {
        if !not_served.contains_key(id) {
            problems.push(format!(
                "{id}: in the table \"{TABLE_HEADING}\" but not in not-served.txt"
            ));
        }
    }
    problems
}

#[tokio::test]
async fn every_v2_operation_is_served_or_listed_as_not_served() {
    let document: Value = serde_json::from_str(DOCUMENT).expect("the fixture is JSON");
    let operations = operations(&document);
    assert!(
        operations.len() > 40,
        "the fixture lost operations: {}",
        operations.len()
    );
    let not_served = parse_not_served(NOT_SERVED).expect("not-served.txt parses");
    let documented =
        documented_not_served(EMULATOR_README, CONFORMANCE_README).expect("the table exists");

    let e = start_default().await;
    let mut reached = BTreeMap::new();
    for op in &operations {
        let method = Method::from_bytes(op.method.to_uppercase().as_bytes()).unwrap();
        let url = format!("{}{}", e.emu.base_url(), concrete_path(&op.path));
        let body = matches!(op.method.as_str(), "post" | "put" | "patch").then(|| json!({}));
        let r = e
            .call(method, &url, Some(&format!("Bearer {KEY}")), body)
            .await;
        reached.insert(op.id.clone(), reach(r.status.as_u16(), &r.body));
    }
    e.emu.shutdown().await;

    let problems = coverage_problems(&operations, &reached, &not_served, &documented);
    assert!(
        problems.is_empty(),
        "{} REST v2 operation(s) neither served nor listed as not served:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The document requires the key on every operation, so one the emulator does not serve is
/// still a 401 without it (schemathesis' missing_required_header over all operations), and
/// the 404 "no route" only with it. Likewise an undeclared method on a served path.
#[tokio::test]
async fn unserved_v2_requests_need_the_key_first() {
    let not_served = parse_not_served(NOT_SERVED).expect("not-served.txt parses");
    let document: Value = serde_json::from_str(DOCUMENT).expect("the fixture is JSON");
    let e = start_default().await;
    let unrouted = operations(&document)
        .into_iter()
        .filter(|op| not_served.contains_key(&op.id))
        .map(|op| (op.method, concrete_path(&op.path)))
        .chain([("get".to_string(), "/v2/pods/x/nothing-here".to_string())]);
    for (method, path) in unrouted.chain([("put".to_string(), "/v2/pods".to_string())]) {
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let url = format!("{}{}", e.emu.base_url(), path);
        let r = e.call(method.clone(), &url, None, None).await;
        assert_eq!(
            r.status.as_u16(),
            401,
            "{method} {path} without the key: {:?}",
            r.body
        );
        assert_eq!(
            r.headers["content-type"], "application/problem+json",
            "{method} {path}"
        );
        let r = e
            .call(method.clone(), &url, Some("Bearer wrong"), None)
            .await;
        assert_eq!(r.status.as_u16(), 401, "{method} {path} with a wrong key");
        let r = e
            .call(method.clone(), &url, Some(&format!("Bearer {KEY}")), None)
            .await;
        assert!(
            matches!(
                reach(r.status.as_u16(), &r.body),
                Reach::NoRoute | Reach::MethodNotAllowed
            ),
            "{method} {path} with the key: {} {:?}",
            r.status,
            r.body
        );
    }
    e.emu.shutdown().await;
}

#[test]
fn operations_are_read_with_method_path_and_id() {
    let doc = json!({"paths": {
        "/v2/pods/{id}": {"parameters": [], "get": {"operationId": "getPod"},
                          "delete": {"operationId": "deletePod"}},
    }});
    let ops = operations(&doc);
    let labels: Vec<String> = ops.iter().map(Operation::label).collect();
    assert_eq!(
        labels,
        [
            "GET /v2/pods/{id} (getPod)",
            "DELETE /v2/pods/{id} (deletePod)"
        ]
    );
}

#[test]
fn every_path_parameter_gets_the_dummy_id() {
    assert_eq!(
        concrete_path("/v2/serverless/{id}/workers/{workerId}/logs"),
        format!("/v2/serverless/{DUMMY_ID}/workers/{DUMMY_ID}/logs")
    );
    assert_eq!(concrete_path("/v2/pods"), "/v2/pods");
}

#[test]
fn not_served_lines_need_an_id_a_tab_and_a_reason() {
    let list = parse_not_served("# comment\n\nlistClusters\tnot managed\n").unwrap();
    assert_eq!(list["listClusters"], "not managed");
    assert!(parse_not_served("listClusters not managed\n").is_err());
    assert!(parse_not_served("listClusters\t \n").is_err());
    assert!(parse_not_served("a\tx\na\ty\n").is_err());
}

#[test]
fn the_table_is_read_from_the_emulator_readme_or_where_it_points() {
    let conformance = "# T\n## REST v2 operations not served\n| Operation | Why |\n|---|---|\n\
        | `listClusters` | not managed |\n## Next\n| `other` | not in the section |\n";
    let pointing = "## REST v2 operations not served\nSee tests/v2-conformance/README.md.\n";
    let rows = documented_not_served(pointing, conformance).unwrap();
    assert_eq!(
        rows,
        BTreeMap::from([("listClusters".to_string(), "not managed".to_string())])
    );

    let holding = "## REST v2 operations not served\n| `getSshKeys` | account |\n";
    let rows = documented_not_served(holding, conformance).unwrap();
    assert_eq!(rows.keys().collect::<Vec<_>>(), ["getSshKeys"]);

    assert!(documented_not_served("## Other\n", conformance).is_err());
}

#[test]
fn only_the_router_fallback_and_405_count_as_not_served() {
    let no_route = json!({"status": 404, "detail": "no route for GET /v2/pods/x"});
    let unknown_id = json!({"status": 404, "detail": "pod x not found"});
    assert_eq!(reach(404, &no_route), Reach::NoRoute);
    assert_eq!(reach(405, &json!({})), Reach::MethodNotAllowed);
    assert_eq!(reach(404, &unknown_id), Reach::Handler);
    assert_eq!(reach(422, &json!({})), Reach::Handler);
    assert_eq!(reach(200, &Value::Null), Reach::Handler);
}

#[test]
fn problems_name_every_gap_and_every_stale_entry() {
    let op = |id: &str| Operation {
        method: "get".into(),
        path: format!("/v2/{id}"),
        id: id.into(),
    };
    let ops = [
        op("served"),
        op("listed"),
        op("gap"),
        op("stale"),
        op("undocumented"),
    ];
    let reached = BTreeMap::from([
        ("served".to_string(), Reach::Handler),
        ("listed".to_string(), Reach::NoRoute),
        ("gap".to_string(), Reach::MethodNotAllowed),
        ("stale".to_string(), Reach::Handler),
        ("undocumented".to_string(), Reach::NoRoute),
    ]);
    let list = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let not_served = list(&[
        ("listed", "why"),
        ("stale", "why"),
        ("undocumented", "why"),
        ("gone", "why"),
    ]);
    let documented = list(&[("listed", "why"), ("stale", "why"), ("extra", "why")]);
    let problems = coverage_problems(&ops, &reached, &not_served, &documented);
    let starts: Vec<&str> = problems
        .iter()
        .map(|p| p.split(':').next().unwrap())
        .collect();
    assert_eq!(
        starts,
        [
            "GET /v2/gap (gap)",
            "GET /v2/stale (stale)",
            "GET /v2/undocumented (undocumented)",
            "gone",
            "extra"
        ]
    );

    let mismatch = list(&[("listed", "another reason")]);
    let problems = coverage_problems(
        &[op("listed")],
        &reached,
        &list(&[("listed", "why")]),
        &mismatch,
    );
    assert_eq!(problems.len(), 1);
    assert!(problems[0].contains("another reason"), "{problems:?}");
}
