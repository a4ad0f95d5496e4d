//! The GraphQL handler's own answer to `myself { pods { ... } }`, the document the operator
//! (and the official SDK) sends to list pods: written as bytes off the runtime's workers, as
//! the REST lists are, instead of async-graphql building a value per field on them and then
//! writing it.
//!
//! Only documents whose answer is certain are taken: one query operation selecting only
//! `myself` and in it only `pods`, fields of the pod types without arguments or directives,
//! fragments on the type they are spread in, each key once, no variables, every fragment
//! used once. Such a document is valid and async-graphql's answer to it is
//! `{"data":{"myself":{"pods":[...]}}}` with each pod's keys in the order of the selection;
//! anything else (a `@skip`, a second root field, a fragment used twice) goes to
//! async-graphql, whose `myself { pods }` resolver writes pods the same way
//! ([`crate::graphql_fast`]). Tests compare both with async-graphql's own answers.

use std::collections::HashSet;

use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Field, OperationType, Selection, SelectionSet,
};

use super::graphql_fast::{ObjectType, POD, Plan, PlannedPod, listed_pods};
use super::state::App;
use super::v2::listing;

/// A `myself { pods }` listing the handler answers itself: the response keys of the two
/// fields (aliases or names) and the pods' selection.
#[derive(Debug)]
pub struct MyPods {
    myself_key: String,
    pods_key: String,
    plan: Plan,
}

/// Fragments nested deeper than this are left to async-graphql.
const MAX_DEPTH: u32 = 8;

impl MyPods {
    /// The listing the document asks for, if it is one of those the handler answers (see
    /// the module's documentation); `operation_name` as the request names it, `no_variables`
    /// whether it gives none.
    pub fn recognise(
        doc: &ExecutableDocument,
        operation_name: Option<&str>,
        no_variables: bool,
    ) -> Option<Self> {
        if !no_variables {
            return None;
        }
        let op = match (&doc.operations, operation_name) {
            (DocumentOperations::Single(op), None) => op,
            (DocumentOperations::Multiple(ops), name) if ops.len() == 1 => {
                let (op_name, op) = ops.iter().next()?;
                if name.is_some_and(|name| name != op_name.as_str()) {
                    return None;
                }
                op
            }
            _ => return None,
        };
        let op = &op.node;
        if op.ty != OperationType::Query
            || !op.variable_definitions.is_empty()
            || !op.directives.is_empty()
        {
            return None;
        }
        let myself = only_field(&op.selection_set.node, "myself")?;
        let pods = only_field(&myself.selection_set.node, "pods")?;
        let mut plan = Plan::new(&POD);
        let mut used = HashSet::new();
        add(doc, &pods.selection_set.node, &POD, &mut plan, &mut used, 0)?;
        // An unused fragment makes the document invalid: async-graphql answers that.
        if used.len() != doc.fragments.len() {
            return None;
        }
        Some(Self {
            myself_key: response_key(myself).to_string(),
            pods_key: response_key(pods).to_string(),
            plan,
        })
    }

    /// The whole answer's bytes, as async-graphql writes them: the pods are copied under
    /// the world's lock, then written in two halves ([`listing::list_json_within`]). Meant
    /// for the blocking pool.
    pub fn answer(&self, app: &App) -> Vec<u8> {
        let now = app.clock.now();
        let pods = listed_pods(app);
        let key = |k: &str| serde_json::to_string(k).expect("a key serialises");
        let open = format!(
            "{{\"data\":{{{}:{{{}:[",
            key(&self.myself_key),
            key(&self.pods_key)
        );
        // A pod of the operator's selection is about 900 bytes of JSON.
        listing::list_json_within(open.as_bytes(), b"]}}}", &pods, 1024, |(pod, host), out| {
            let planned = PlannedPod {
                pod,
                host,
                app,
                now,
                plan: &self.plan,
            };
            serde_json::to_writer(out, &planned)
        })
    }
}

fn response_key(f: &Field) -> &str {
    f.alias.as_ref().unwrap_or(&f.name).node.as_str()
}

/// The selection's one field, if it is `name` without arguments or directives.
fn only_field<'d>(set: &'d SelectionSet, name: &str) -> Option<&'d Field> {
    let [item] = set.items.as_slice() else {
        return None;
    };
    let Selection::Field(f) = &item.node else {
        return None;
    };
    let f = &f.node;
    (f.name.node.as_str() == name && f.arguments.is_empty() && f.directives.is_empty()).then_some(f)
}

/// Adds the selection `set` on `ty` to `plan`; `None` if the fast path leaves it to
/// async-graphql. `used` collects the fragments spread.
fn add<'d>(
    doc: &'d ExecutableDocument,
    set: &'d SelectionSet,
    ty: &'static ObjectType,
    plan: &mut Plan,
    used: &mut HashSet<&'d str>,
    depth: u32,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    for item in &set.items {
        match &item.node {
            Selection::Field(f) => {
                let f = &f.node;
                if !f.arguments.is_empty() || !f.directives.is_empty() {
                    return None;
                }
                let (field, sub_ty) = ty.field(f.name.node.as_str())?;
                let key = response_key(f);
                // A key selected twice is merged by async-graphql, or refused.
                if plan.has(key) {
                    return None;
                }
                let children = &f.selection_set.node;
                let sub = match sub_ty {
                    None if children.items.is_empty() => None,
                    Some(t) if !children.items.is_empty() => {
                        let mut sub = Plan::new(t);
                        add(doc, children, t, &mut sub, used, depth + 1)?;
                        Some(sub)
                    }
                    // A leaf with a selection, or an object without one: invalid.
                    _ => return None,
                };
                plan.push(key, field, sub);
            }
            Selection::InlineFragment(f) => {
                let f = &f.node;
                let on = f.type_condition.as_ref().map(|c| c.node.on.node.as_str());
                if !f.directives.is_empty() || on.is_some_and(|on| on != ty.name) {
                    return None;
                }
                add(doc, &f.selection_set.node, ty, plan, used, depth + 1)?;
            }
            Selection::FragmentSpread(s) => {
                let s = &s.node;
                let (name, frag) = doc.fragments.get_key_value(&s.fragment_name.node)?;
                let frag = &frag.node;
                if !s.directives.is_empty()
                    || !frag.directives.is_empty()
                    || frag.type_condition.node.on.node.as_str() != ty.name
                {
                    return None;
                }
                // Spread twice it repeats its keys; spread in itself it never ends.
                if !used.insert(name.as_str()) {
                    return None;
                }
                add(doc, &frag.selection_set.node, ty, plan, used, depth + 1)?;
            }
        }
    }
    Some(())
}

#[cfg(test)]
#[path = "graphql_my_pods_tests.rs"]
mod tests;
