//! `platform v2 billing ...`: spend over a window, in all or per resource family.

use super::args::{BillingArgs, BillingCommand};
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{BillingBucketSize, BillingWindow, V2};

pub(super) async fn run(v2: &V2, out: Printer, command: BillingCommand) -> anyhow::Result<()> {
    match command {
        BillingCommand::All(w) => {
            let h = v2.billing(&window(w)).await?;
            out.wrapped(&h, &h.records)
        }
        BillingCommand::Pods { window: w, id } => {
            let h = v2.pod_billing(&window(w), id.as_deref()).await?;
            out.wrapped(&h, &h.records)
        }
        BillingCommand::Serverless { window: w, id } => {
            let h = v2.serverless_billing(&window(w), id.as_deref()).await?;
            out.wrapped(&h, &h.records)
        }
        BillingCommand::Volumes { window: w, id } => {
            let h = v2.network_volume_billing(&window(w), id.as_deref()).await?;
            out.wrapped(&h, &h.records)
        }
    }
}

fn window(a: BillingArgs) -> BillingWindow {
    BillingWindow {
        start_time: a.start,
        end_time: a.end,
        bucket_size: a.bucket.map(|b| {
            b.parse::<BillingBucketSize>()
                .unwrap_or_else(|e| match e {})
        }),
        last_n: a.last,
    }
}
