//! The deploy of a pod, GPU or CPU: the CPU candidates and the global network's data
//! centers (read from shared catalog listings), and the walk down the candidates that
//! falls through on a capacity answer and on a pod billed above the cap.
//!
//! Price as billed: a created pod's own `cost` (in the create's answer, so no extra
//! call) is compared with the cap; above it the pod is terminated at once, the placement
//! skipped for a cool-down, a `PriceAboveCap` Warning published and the next candidate
//! tried. Should the operator die between the create and the terminate, the next pass
//! finds the pod by its tag and `decide::billed_after_create` replaces it.

use std::collections::HashSet;
use std::time::Duration;

use gpucloud_engine::adapter::{Created, Note};
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_engine::snapshot::Freshness;
use gpucloud_platform::domain::Pod as RemotePod;
use gpucloud_platform::{PlatformClient, PlatformError};
use gpucloud_policy::cpu_placement::{self, CpuRules};
use gpucloud_policy::fallback::Fallback;
use gpucloud_policy::placement;
use tokio::time::Instant;

use super::placing::{self, Offer, Target};
use super::{BudgetSlot, DesiredCpu, PodAdapter, ResolvedPod, fallback_note};

/// How many cool-downs a placement that billed a pod above the cap is skipped for: a
/// price is not a passing shortage, and each retry there is one more pod billed for its
/// first minutes before it is terminated.
const BILLED_COOLDOWNS: u32 = 10;

impl PodAdapter {
    /// Skips `target` for [`BILLED_COOLDOWNS`] cool-downs: it billed a pod above the cap.
    fn mark_overbilled(&self, target: &Target, count: i32) -> Duration {
        let skip = self.cooldown * BILLED_COOLDOWNS;
        self.exhausted
            .lock()
            .insert((target.clone(), count), Instant::now() + skip);
        skip
    }

    /// Where a CPU pod may go, in order of preference, from the CPU catalog (read at most
    /// once per interval per account and size).
    pub(super) async fn cpu_candidates(
        &self,
        client: &PlatformClient,
        resolved: &ResolvedPod,
        cpu: &DesiredCpu,
    ) -> Result<Vec<Offer>, Failure> {
        let catalog = self
            .cpu_catalog
            .get(
                &(resolved.account, cpu.vcpu_count),
                Freshness::MaxAge(self.catalog_max_age),
                || async {
                    client
                        .catalog()
                        .cpu_offers(cpu.vcpu_count)
                        .await
                        .map_err(|e| Failure::from_platform("list CPU flavors", &e))
                },
            )
            .await?;
        let d = &resolved.pod;
        let data_centers: Vec<String> = d.data_center_id.iter().cloned().collect();
        let rules = CpuRules {
            flavors: &cpu.flavors,
            vcpu_count: cpu.vcpu_count,
            max_price_per_hour: d.max_price_per_hour,
            data_center_ids: &data_centers,
        };
        let exhausted = self.exhausted_cpu_placements();
        let mut candidates =
            cpu_placement::choose_cpu_placements(&rules, &catalog.items, &exhausted)?;
        if d.request.network_volume_id.is_some() {
            // As for GPU pods: the volume decides the data center, one try per flavor.
            let mut seen = HashSet::new();
            candidates.retain_mut(|c| {
                c.placement.data_center_id = None;
                seen.insert(c.placement.clone())
            });
        }
        Ok(candidates.into_iter().map(Offer::from).collect())
    }

    /// The data centers on the global network (read at most once per interval).
    pub(super) async fn global_data_centers(
        &self,
        client: &PlatformClient,
        account: AccountId,
    ) -> Result<Vec<String>, Failure> {
        let listing = self
            .global_data_centers
            .get(
                &account,
                Freshness::MaxAge(self.catalog_max_age),
                || async {
                    client
                        .catalog()
                        .global_network_data_centers()
                        .await
                        .map_err(|e| Failure::from_platform("list data centers", &e))
                },
            )
            .await?;
        Ok(listing.items.clone())
    }

    /// Deploys on the first of `candidates` the platform accepts and bills within the
    /// cap. Each candidate dearer than the one admitted is admitted again first (a
    /// fallback to a dearer type must fit the Budget too).
    pub(super) async fn deploy(
        &self,
        client: &PlatformClient,
        budget: &BudgetSlot,
        resolved: &ResolvedPod,
        candidates: &[Offer],
    ) -> Result<Created<RemotePod>, Failure> {
        let d = &resolved.pod;
        let request = &d.request;
        let count = d.cpu.as_ref().map_or(request.gpu_count, |c| {
            i32::try_from(c.vcpu_count).unwrap_or(i32::MAX)
        });
        let mut fallback = Fallback::new(candidates, |c| c.price_per_hour);
        // Pods created above the cap and terminated in this pass: one Event each.
        let mut billed_notes: Vec<Note> = Vec::new();
        let mut overbilled: Option<String> = None;
        while let Some((i, candidate)) = fallback.next(|price| self.reserve(budget, price))? {
            let Offer {
                target: at,
                price_per_hour,
            } = candidate;
            let answer = match at {
                Target::Gpu(p) => client.pods().deploy(request, p).await,
                Target::Cpu(p) => client.pods().deploy_cpu(request, p).await,
            };
            match answer {
                Ok(mut pod) => {
                    pod.cost_per_hr.get_or_insert(*price_per_hour);
                    if let (Some(billed), Some(cap)) = (
                        placing::billed_above_cap(d.price_cap(), pod.cost_per_hr),
                        d.price_cap(),
                    ) {
                        // Billed above the cap: the pod goes at once (the next pass's
                        // plan would replace it anyway, should this pass die here).
                        client.pods().terminate(&pod.id).await.map_err(|e| {
                            let mut f = Failure::from_platform(
                                &format!("terminate pod {} billed above the cap", pod.id),
                                &e,
                            )
                            .with_notes(std::mem::take(&mut billed_notes));
                            f.applied = Applied::MaybeAnswered;
                            f
                        })?;
                        let skip = self.mark_overbilled(at, count);
                        let next = if i + 1 < candidates.len() {
                            format!(
                                "skipping it for {}s; trying the next placement",
                                skip.as_secs().max(1)
                            )
                        } else {
                            format!(
                                "skipping it for {}s; no placement left",
                                skip.as_secs().max(1)
                            )
                        };
                        let message = placing::billed_note(
                            &at.describe(),
                            &pod.id,
                            *price_per_hour,
                            billed,
                            cap,
                            &next,
                        );
                        tracing::warn!(
                            pod = %pod.id,
                            quoted = *price_per_hour,
                            billed,
                            cap,
                            "created pod billed above the cap; terminated"
                        );
                        billed_notes.push(Note {
                            reason: "PriceAboveCap".into(),
                            warning: true,
                            action: "Create",
                            message: message.clone(),
                        });
                        overbilled = Some(message);
                        continue;
                    }
                    // One Event for the whole fallback: users need to see why their pod
                    // runs lower in their list. If every placement is refused, the last
                    // refusal is the pass's failure, reported by the engine instead.
                    let mut notes = billed_notes;
                    let reason = match at {
                        Target::Gpu(_) => "GpuTypeNoCapacity",
                        Target::Cpu(_) => "CpuFlavorNoCapacity",
                    };
                    let (refused_at, last) = refusals(candidates, fallback.no_room());
                    notes.extend(last.map(|e| Note {
                        reason: reason.into(),
                        warning: true,
                        action: "Create",
                        message: fallback_note(&refused_at, e, &at.describe(), self.cooldown),
                    }));
                    return Ok(Created { remote: pod, notes });
                }
                Err(e) => {
                    let doing = format!("deploy the pod on {}", at.describe());
                    if let Err(f) = fallback.refused(i, e, &doing) {
                        return Err(f.with_notes(billed_notes));
                    }
                    // No room there: skipped for a cool-down, and the next one tried.
                    self.mark_exhausted(at, count);
                }
            }
        }
        if overbilled.is_some() {
            // The last overbilled pod is the failure's own Event.
            billed_notes.pop();
        }
        let refused = fallback.no_room().last().map(|(_, e)| e.clone());
        let failure = match (refused, overbilled, &d.cpu) {
            // A pod billed above the cap says PriceAboveCap even if later candidates had
            // no stock: the cap is what the user can act on.
            (_, Some(message), _) => Failure::stalled_retrying("PriceAboveCap", message),
            (Some(e), None, Some(cpu)) => Failure::from_platform(
                &format!(
                    "deploy {} vCPUs of any of {}",
                    cpu.vcpu_count,
                    cpu.flavors.join(", ")
                ),
                &e,
            ),
            (Some(e), None, None) => Failure::from_platform(
                &format!(
                    "deploy {} GPU(s) of any of {}",
                    d.request.gpu_count,
                    d.gpu_types.join(", ")
                ),
                &e,
            ),
            (None, None, Some(cpu)) => cpu_placement::no_cpu_capacity(&cpu.flavors, cpu.vcpu_count),
            (None, None, None) => placement::no_capacity(&d.gpu_types, d.request.gpu_count),
        };
        Err(failure.with_notes(billed_notes))
    }
}

/// Pure: where the pod was refused for capacity in this pass, in order, and the last
/// refusal (what the fallback's Event quotes).
fn refusals<'f>(
    candidates: &[Offer],
    no_room: &'f [(usize, PlatformError)],
) -> (Vec<String>, Option<&'f PlatformError>) {
    let at = no_room
        .iter()
        .map(|(i, _)| candidates[*i].target.describe())
        .collect();
    (at, no_room.last().map(|(_, e)| e))
}
