//! The built-in worker handler. It reads the job's `input`:
//! - `output`: the job's output (default: the input itself);
//! - `sleep_ms`: how long the work takes (so an execution timeout can fire);
//! - `fail`: a string; the job fails with that error;
//! - `stream`: an array; each element becomes one stream chunk's `output`, in order.
//!
//! Bad values fail the job the way a real handler's input validation would.

use serde_json::Value;

use super::model::MIB;

/// Largest stream chunk, serialized.
pub const CHUNK_LIMIT: usize = MIB;

/// What a worker will do with one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub sleep_ms: u64,
    /// The final output, or the error the job fails with.
    pub outcome: Result<Value, String>,
    /// Stream elements, in order (before splitting at 1 MB).
    pub stream: Vec<Value>,
}

pub fn plan(input: &Value) -> Plan {
    let get = |k: &str| input.get(k).filter(|v| !v.is_null());
    let mut problems = Vec::new();
    let sleep_ms = match get("sleep_ms") {
        None => 0,
        Some(v) => v.as_u64().unwrap_or_else(|| {
            problems.push("sleep_ms must be a non-negative integer".to_string());
            0
        }),
    };
    let stream = match get("stream") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            problems.push("stream must be an array".to_string());
            Vec::new()
        }
    };
    let outcome = if !problems.is_empty() {
        Err(format!("handler input error: {}", problems.join("; ")))
    } else {
        match get("fail") {
            Some(Value::String(msg)) => Err(msg.clone()),
            Some(other) => Err(other.to_string()),
            None => Ok(get("output").cloned().unwrap_or_else(|| input.clone())),
        }
    };
    Plan {
        sleep_ms,
        outcome,
        stream,
    }
}

/// Splits one output into chunks of at most [`CHUNK_LIMIT`] bytes serialized. Small values
/// stay as they are; a large string is cut into substrings; any other large value is
/// serialized and its text cut, so concatenating the pieces gives the JSON back.
pub fn split_chunk(value: Value) -> Vec<Value> {
    let serialized_len = serde_json::to_vec(&value).map_or(0, |v| v.len());
    if serialized_len <= CHUNK_LIMIT {
        return vec![value];
    }
    let text = match value {
        Value::String(s) => s,
        other => other.to_string(),
    };
    // Leave room for the quotes and for escapes that JSON adds to a string.
    let budget = CHUNK_LIMIT / 2;
    let mut pieces = Vec::new();
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let mut cut = budget.min(rest.len());
        loop {
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            // Control characters escape to six bytes each: shrink until the piece fits.
            if cut <= 4 || serde_json::to_vec(&rest[..cut]).map_or(0, |v| v.len()) <= CHUNK_LIMIT {
                break;
            }
            cut /= 2;
        }
        let (head, tail) = rest.split_at(cut.max(rest.chars().next().map_or(1, char::len_utf8)));
        pieces.push(Value::String(head.to_string()));
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn output_defaults_to_input() {
        let input = json!({"prompt": "hi"});
        assert_eq!(plan(&input).outcome, Ok(input.clone()));
        assert_eq!(plan(&json!({"output": 7})).outcome, Ok(json!(7)));
    }

    #[test]
    fn fail_sleep_stream() {
        let p = plan(&json!({"fail": "boom", "sleep_ms": 20, "stream": [1, 2]}));
        assert_eq!(p.outcome, Err("boom".into()));
        assert_eq!(p.sleep_ms, 20);
        assert_eq!(p.stream, vec![json!(1), json!(2)]);
        let bad = plan(&json!({"sleep_ms": "long"}));
        assert!(bad.outcome.unwrap_err().contains("sleep_ms"));
    }

    #[test]
    fn chunks_are_split_at_one_megabyte() {
        let small = json!({"a": 1});
        assert_eq!(split_chunk(small.clone()), vec![small]);
        let big = "x".repeat(3 * MIB);
        let pieces = split_chunk(Value::String(big.clone()));
        assert!(pieces.len() >= 3);
        for p in &pieces {
            assert!(serde_json::to_vec(p).unwrap().len() <= CHUNK_LIMIT);
        }
        let joined: String = pieces.iter().map(|p| p.as_str().unwrap()).collect();
        assert_eq!(joined, big);
        // Multi-byte characters are never cut in half.
        let wide = "é".repeat(MIB);
        let joined: String = split_chunk(Value::String(wide.clone()))
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect();
        assert_eq!(joined, wide);
    }
}
