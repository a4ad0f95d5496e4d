//! How `platform` prints: a table for people or JSON for scripts, one row a value.

use std::io::Write;

use serde::Serialize;

use super::super::table::render;
use gpucloud_platform::types::Job;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns for people.
    Table,
    /// JSON for scripts.
    Json,
}

/// A value the CLI shows as one row of a table: its columns' headers and its cells.
pub(crate) trait Row: Serialize {
    const COLUMNS: &'static [&'static str];
    fn cells(&self) -> Vec<String>;
}

/// Prints results in the format the user chose.
#[derive(Clone, Copy)]
pub(crate) struct Printer {
    pub(crate) format: OutputFormat,
}

impl Printer {
    /// Values that know their own columns (see [`Row`]).
    pub(crate) fn rows<T: Row>(&self, items: &[T]) -> anyhow::Result<()> {
        self.list(items, T::COLUMNS, T::cells)
    }

    /// One value that knows its own columns: a one-row table, or the value as JSON.
    pub(crate) fn row<T: Row>(&self, item: &T) -> anyhow::Result<()> {
        self.one(item, T::COLUMNS, T::cells)
    }

    /// An answer that wraps a list: the whole answer as JSON, its list as a table.
    pub(crate) fn wrapped<W: Serialize, T: Row>(
        &self,
        answer: &W,
        items: &[T],
    ) -> anyhow::Result<()> {
        match self.format {
            OutputFormat::Json => self.json(answer),
            OutputFormat::Table => self.rows(items),
        }
    }

    /// What a delete did: the id and `deleted`.
    pub(crate) fn deleted(&self, id: &str) -> anyhow::Result<()> {
        self.done(id, "deleted")
    }

    pub(crate) fn list<T: Serialize>(
        &self,
        items: &[T],
        headers: &[&str],
        row: impl Fn(&T) -> Vec<String>,
    ) -> anyhow::Result<()> {
        let text = match self.format {
            OutputFormat::Json => format!("{}\n", serde_json::to_string_pretty(items)?),
            OutputFormat::Table => render(headers, &items.iter().map(row).collect::<Vec<_>>()),
        };
        std::io::stdout().write_all(text.as_bytes())?;
        Ok(())
    }

    /// One object: a one-row table, or the object itself as JSON.
    pub(crate) fn one<T: Serialize>(
        &self,
        item: &T,
        headers: &[&str],
        row: impl Fn(&T) -> Vec<String>,
    ) -> anyhow::Result<()> {
        match self.format {
            OutputFormat::Json => self.json(item),
            OutputFormat::Table => self.list(std::slice::from_ref(item), headers, row),
        }
    }

    pub(crate) fn json<T: Serialize + ?Sized>(&self, value: &T) -> anyhow::Result<()> {
        let text = format!("{}\n", serde_json::to_string_pretty(value)?);
        std::io::stdout().write_all(text.as_bytes())?;
        Ok(())
    }

    /// What was done to an object that has no answer to show.
    pub(crate) fn done(&self, id: &str, what: &str) -> anyhow::Result<()> {
        match self.format {
            OutputFormat::Json => self.json(&serde_json::json!({"id": id, "result": what})),
            OutputFormat::Table => {
                println!("{id} {what}");
                Ok(())
            }
        }
    }

    pub(crate) fn job(&self, job: &Job) -> anyhow::Result<()> {
        match self.format {
            OutputFormat::Json => println!("{}", serde_json::to_string_pretty(job)?),
            OutputFormat::Table => {
                let id = job.id.clone().unwrap_or_default();
                let times = format!(
                    "{}/{}",
                    job.delay_time
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "-".into()),
                    job.execution_time
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "-".into())
                );
                print!(
                    "{}",
                    render(
                        &["ID", "STATUS", "DELAY/EXEC"],
                        &[vec![id, job.status.to_string(), times]]
                    )
                );
                if let Some(output) = &job.output {
                    println!("output: {}", serde_json::to_string_pretty(output)?);
                }
                if let Some(err) = job.extra.get("error").filter(|e| !e.is_null()) {
                    println!("error: {err}");
                }
            }
        }
        Ok(())
    }
}
