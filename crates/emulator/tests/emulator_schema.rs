//! The schema the emulator serves equals `schema/platform.graphql` structurally: types,
//! fields, arguments, types of fields and arguments with nullability, enums, inputs and root
//! operations. Descriptions, ordering and built-in directives are ignored.

use std::collections::BTreeMap;

use apollo_compiler::Schema;
use apollo_compiler::schema::ExtendedType;

/// One line per fact, keyed for a readable diff.
fn shape(sdl: &str, origin: &str) -> BTreeMap<String, String> {
    let schema =
        Schema::parse(sdl, origin).unwrap_or_else(|e| panic!("{origin} does not parse: {e}"));
    let mut out = BTreeMap::new();
    let roots = &schema.schema_definition;
    out.insert(
        "schema.query".into(),
        format!("{:?}", roots.query.as_ref().map(|n| n.to_string())),
    );
    out.insert(
        "schema.mutation".into(),
        format!("{:?}", roots.mutation.as_ref().map(|n| n.to_string())),
    );
    out.insert(
        "schema.subscription".into(),
        format!("{:?}", roots.subscription.as_ref().map(|n| n.to_string())),
    );
    for (name, ty) in &schema.types {
        if ty.is_built_in() {
            continue;
        }
        let prefix = name.to_string();
        match ty {
            ExtendedType::Object(o) => {
                out.insert(prefix.clone(), "object".into());
                let mut ifaces: Vec<String> = o
                    .implements_interfaces
                    .iter()
                    .map(|i| i.to_string())
                    .collect();
                ifaces.sort();
                out.insert(format!("{prefix} implements"), ifaces.join(","));
                for (fname, f) in &o.fields {
                    out.insert(format!("{prefix}.{fname}"), f.ty.to_string());
                    for arg in &f.arguments {
                        out.insert(
                            format!("{prefix}.{fname}({})", arg.name),
                            format!(
                                "{} = {:?}",
                                arg.ty,
                                arg.default_value.as_ref().map(|v| v.to_string())
                            ),
                        );
                    }
                }
            }
            ExtendedType::InputObject(i) => {
                out.insert(prefix.clone(), "input".into());
                for (fname, f) in &i.fields {
                    out.insert(
                        format!("{prefix}.{fname}"),
                        format!(
                            "{} = {:?}",
                            f.ty,
                            f.default_value.as_ref().map(|v| v.to_string())
                        ),
                    );
                }
            }
            ExtendedType::Enum(e) => {
                let mut values: Vec<String> = e.values.keys().map(|v| v.to_string()).collect();
                values.sort();
                out.insert(prefix, format!("enum {}", values.join(" ")));
            }
            ExtendedType::Scalar(_) => {
                out.insert(prefix, "scalar".into());
            }
            ExtendedType::Interface(i) => {
                out.insert(prefix.clone(), "interface".into());
                for (fname, f) in &i.fields {
                    out.insert(format!("{prefix}.{fname}"), f.ty.to_string());
                }
            }
            ExtendedType::Union(u) => {
                let mut members: Vec<String> = u.members.iter().map(|m| m.to_string()).collect();
                members.sort();
                out.insert(prefix, format!("union {}", members.join(" ")));
            }
        }
    }
    out
}

#[test]
fn served_schema_equals_the_committed_sdl() {
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../schema/platform.graphql"
    ))
    .expect("schema/platform.graphql");
    let served = gpucloud_emulator::graphql::build_schema().sdl();
    let want = shape(&committed, "schema/platform.graphql");
    let got = shape(&served, "served.graphql");
    let mut problems = Vec::new();
    for (k, v) in &want {
        match got.get(k) {
            None => problems.push(format!("missing in the emulator: {k} ({v})")),
            Some(g) if g != v => problems.push(format!("differs: {k}: committed {v}, served {g}")),
            _ => {}
        }
    }
    for (k, v) in &got {
        if !want.contains_key(k) {
            problems.push(format!("only in the emulator: {k} ({v})"));
        }
    }
    assert!(
        problems.is_empty(),
        "schema drift:\n{}",
        problems.join("\n")
    );
    // The comparison itself can fail: a changed nullability is caught.
    let tweaked = committed.replace(
        "podId: String!\n  gpuCount: Int",
        "podId: String\n  gpuCount: Int",
    );
    assert_ne!(shape(&tweaked, "tweaked.graphql"), want);
}
