//! `platform v2 templates ...`: the account's templates.

use super::args::TemplateCommand;
use super::body::read_body;
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{CreateContainerConfig, CreateTemplate, UpdateTemplate, V2};

pub(super) async fn run(v2: &V2, out: Printer, command: TemplateCommand) -> anyhow::Result<()> {
    match command {
        TemplateCommand::List => out.rows(&v2.list_templates().await?),
        TemplateCommand::Get { id } => out.row(&v2.get_template(&id).await?),
        TemplateCommand::Create {
            body,
            name,
            image,
            serverless,
        } => {
            let body = match body {
                Some(raw) => read_body(&raw)?,
                None => CreateTemplate {
                    name: name.unwrap_or_default(),
                    container: CreateContainerConfig {
                        image: image.unwrap_or_default(),
                        ..CreateContainerConfig::default()
                    },
                    serverless: serverless.then_some(true),
                    ..CreateTemplate::default()
                },
            };
            out.row(&v2.create_template(&body).await?)
        }
        TemplateCommand::Update { id, body } => {
            let body: UpdateTemplate = read_body(&body)?;
            out.row(&v2.update_template(&id, &body).await?)
        }
        TemplateCommand::Delete { id } => {
            v2.delete_template(&id).await?;
            out.deleted(&id)
        }
    }
}
