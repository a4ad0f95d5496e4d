//! The demo's live table: the rows of every kind, rendered as aligned text.

use crate::kinds::summary::Row;

/// The table as text, rows sorted by kind and name, columns as wide as their content.
pub fn render(rows: &[Row]) -> String {
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    let header = ["KIND", "NAME", "STATE", "GPU", "COST/HR", "READY"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.kind.to_string(),
                r.name.clone(),
                r.state.clone(),
                r.gpu.clone(),
                r.cost_per_hour
                    .map(|c| format!("${c:.2}"))
                    .unwrap_or_else(|| "-".into()),
                r.ready.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}   "));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&header.map(String::from));
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_and_rows_are_sorted() {
        let a = Row {
            kind: "Pod",
            name: "b".into(),
            state: "Running".into(),
            gpu: "1x RTX 4090".into(),
            cost_per_hour: Some(0.34),
            ready: "True".into(),
            is_ready: true,
            ..Row::default()
        };
        let b = Row {
            kind: "NetworkVolume",
            name: "a-long-name".into(),
            state: "50 GB in EU-RO-1".into(),
            gpu: "-".into(),
            cost_per_hour: None,
            ready: "Creating".into(),
            is_ready: false,
            ..Row::default()
        };
        let text = render(&[a, b]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("NetworkVolume"), "{text}");
        let column = lines[0].find("STATE").unwrap();
        assert_eq!(&lines[1][column..column + 16], "50 GB in EU-RO-1");
        assert_eq!(&lines[2][column..column + 7], "Running");
    }
}
