"""schemathesis hooks for run.sh: positive_data_acceptance with the listed exceptions.

The emulator refuses some schema-valid requests on purpose: the document's prose puts rules on
top of its schemas (a GPU type must exist, two fields exclude each other). Each such refusal is
listed in refused-valid.toml with the rule that makes it. The check registered here,
`listed_positive_data_acceptance`, is schemathesis' own `positive_data_acceptance` except that
a refusal every one of whose reasons an entry of the list names for that operation passes;
any other refusal of a schema-valid request fails the run. The file named by
V2_CONFORMANCE_TALLY gets a line per response (`case KIND`) and per listed refusal
(`listed ID`), for the summary.

It also leaves an empty array out of a positive case's query (see `before_call`).

Also importable without schemathesis (`load`, `matching_entry`), for the list's own test.
"""

import json
import os
import re
import threading
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
LIST_PATH = os.path.join(HERE, "refused-valid.toml")
STATUSES = {400, 409, 422}
KEYS = {"id", "operations", "status", "reason", "body", "rule", "why"}


def load(path=LIST_PATH):
    """The list's entries, each with its `reason` compiled; a malformed entry is an error."""
    with open(path, "rb") as f:
        entries = tomllib.load(f).get("refused", [])
    seen = set()
    for entry in entries:
        if set(entry) != KEYS:
            raise ValueError(f"{path}: entry {entry.get('id')!r} needs exactly {sorted(KEYS)}")
        if entry["id"] in seen:
            raise ValueError(f"{path}: duplicate id {entry['id']!r}")
        if entry["status"] not in STATUSES:
            raise ValueError(f"{path}: {entry['id']}: status must be one of {sorted(STATUSES)}")
        seen.add(entry["id"])
        entry["pattern"] = re.compile(entry["reason"])
    return entries


def reasons_of(body):
    """The reasons a problem answer gives: its `errors`, else its `detail`."""
    try:
        problem = json.loads(body)
    except ValueError:
        return []
    if not isinstance(problem, dict):
        return []
    errors = problem.get("errors")
    if isinstance(errors, list) and errors and all(isinstance(e, str) for e in errors):
        return errors
    detail = problem.get("detail")
    return [detail] if isinstance(detail, str) else []


def matching_entry(entries, operation_id, status, body):
    """The entries that explain a refusal, one per reason, or None when any reason is unlisted."""
    reasons = reasons_of(body)
    if not reasons:
        return None
    found = []
    for reason in reasons:
        entry = next(
            (
                e
                for e in entries
                if operation_id in e["operations"]
                and e["status"] == status
                and e["pattern"].search(reason)
            ),
            None,
        )
        if entry is None:
            return None
        found.append(entry)
    return found


def case_kind(case):
    """Which data checks a case is for: positive, negative, a missing header or an undeclared
    method (coverage probes), or none of these."""
    from schemathesis.generation.meta import CoveragePhaseData, CoverageScenario

    meta = case.meta
    if meta is None:
        return "other"
    data = meta.phase.data
    if isinstance(data, CoveragePhaseData):
        if data.scenario == CoverageScenario.UNSPECIFIED_HTTP_METHOD:
            return "undeclared-method"
        if data.scenario == CoverageScenario.MISSING_PARAMETER and str(data.parameter_location) in (
            "header",
            "ParameterLocation.HEADER",
        ):
            return "missing-header"
    return "positive" if meta.generation.mode.is_positive else "negative"


def _register():
    import schemathesis
    from schemathesis.openapi.checks import RejectedPositiveData
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    entries = load()
    tally_path = os.environ.get("V2_CONFORMANCE_TALLY")
    lock = threading.Lock()

    def tally(lines):
        if tally_path:
            with lock, open(tally_path, "a") as out:
                out.writelines(f"{line}\n" for line in lines)

    @schemathesis.check
    def listed_positive_data_acceptance(ctx, response, case):
        tally([f"case {case_kind(case)}"])
        try:
            return positive_data_acceptance(ctx, response, case)
        except RejectedPositiveData:
            operation_id = case.operation.definition.raw.get("operationId")
            found = matching_entry(entries, operation_id, response.status_code, response.content)
            if found is None:
                raise
            tally(f"listed {e['id']}" for e in found)
            return None

    lists = array_query_parameters()

    @schemathesis.hook
    def before_call(context, case, kwargs):
        # An empty array in a form-style query is no parameter at all (RFC 6570 expands an
        # empty list to nothing), but schemathesis sends it as `name=`, which reads as the
        # one-entry list [""]. In positive cases (where "" cannot be a lone entry the schema
        # allows) such a parameter is left out, as a client would send it.
        if case.meta is None or not case.meta.generation.mode.is_positive:
            return
        operation_id = case.operation.definition.raw.get("operationId")
        if isinstance(case.query, dict):
            empty = [n for n, v in case.query.items() if v == "" and (operation_id, n) in lists]
            for name in empty:
                del case.query[name]


def array_query_parameters():
    """(operationId, name) of every query parameter of the fixture whose schema is an array."""
    with open(os.path.join(HERE, "..", "fixtures", "platform-rest-v2.openapi.json")) as f:
        document = json.load(f)
    shared = document.get("components", {}).get("parameters", {})
    found = set()
    for item in document["paths"].values():
        for operation in item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            for parameter in operation.get("parameters", []):
                ref = parameter.get("$ref", "")
                parameter = shared.get(ref.rsplit("/", 1)[-1], parameter) if ref else parameter
                is_array = parameter.get("schema", {}).get("type") == "array"
                if parameter.get("in") == "query" and is_array:
                    found.add((operation["operationId"], parameter["name"]))
    return found


if __name__ == "_schemathesis_hooks":
    _register()
