//! Plain-text tables for the CLI: left-aligned columns, two spaces apart, header first.

/// Renders `rows` under `headers`. Cells are single-line (newlines become spaces).
pub(crate) fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let clean = |s: &str| s.replace(['\n', '\r', '\t'], " ");
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut parts = Vec::new();
        for (i, cell) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            parts.push(format!("{cell:<w$}"));
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in &rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let t = render(
            &["ID", "NAME"],
            &[
                vec!["a".into(), "first".into()],
                vec!["long-id".into(), "x\ny".into()],
            ],
        );
        assert_eq!(t, "ID       NAME\na        first\nlong-id  x y\n");
    }

    #[test]
    fn empty_table_has_a_header() {
        assert_eq!(render(&["ID"], &[]), "ID\n");
    }
}
