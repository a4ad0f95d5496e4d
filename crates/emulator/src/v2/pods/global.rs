//! `globalNetworking` on a pod: the document says it needs an NVIDIA GPU and a data center
//! whose catalog entry has `globalNetwork: true`, "both enforced upstream". The emulator
//! enforces them where the platform's deploy does: a create places such a pod only in those
//! data centers, and a request that cannot be met (a CPU pod, another GPU maker, only
//! ineligible data centers or a volume in one) is a 400 naming `globalNetworking`.

use super::*;

/// Whether a GPU type is NVIDIA's, as the catalog's `manufacturer` says.
fn is_nvidia(world: &World, gpu_type_id: &str) -> bool {
    world
        .cloud
        .gpu_type(gpu_type_id)
        .is_some_and(|g| g.manufacturer.eq_ignore_ascii_case("nvidia"))
}

/// The data centers that offer global networking, in catalog order.
fn eligible(world: &World) -> Vec<String> {
    world
        .data_centers
        .iter()
        .filter(|d| d.global_network)
        .map(|d| d.id.clone())
        .collect()
}

/// The data centers a create may use: `requested` as it is without global networking;
/// with it, only those among them (all of them when none were named) that offer it.
pub(super) fn create_data_centers(
    world: &World,
    b: &CreatePodBody,
    requested: Vec<String>,
    volume_dc: Option<&str>,
) -> V2Result<Vec<String>> {
    if b.global_networking != Some(true) {
        return Ok(requested);
    }
    let gpu = match (&b.gpu, &b.cpu) {
        (Some(g), _) => g.id.as_str(),
        (None, _) => {
            return Err(Problem::bad_request(
                "globalNetworking: requires an NVIDIA GPU pod; a CPU pod cannot join the global network",
            ));
        }
    };
    if !is_nvidia(world, gpu) {
        return Err(Problem::bad_request(format!(
            "globalNetworking: requires an NVIDIA GPU; {gpu} is not one"
        )));
    }
    let eligible = eligible(world);
    if let Some(dc) = volume_dc
        && !eligible.iter().any(|e| e == dc)
    {
        return Err(Problem::bad_request(format!(
            "globalNetworking: the network volume's data center {dc} has no global networking (eligible: {})",
            eligible.join(", ")
        )));
    }
    if requested.is_empty() {
        return Ok(eligible);
    }
    let kept: Vec<String> = requested
        .iter()
        .filter(|d| eligible.contains(d))
        .cloned()
        .collect();
    if kept.is_empty() {
        return Err(Problem::bad_request(format!(
            "globalNetworking: none of dataCenterIds ({}) has global networking (eligible: {})",
            requested.join(", "),
            eligible.join(", ")
        )));
    }
    Ok(kept)
}

/// A PATCH that turns global networking on must find the pod eligible where it is.
pub(super) fn check_update(world: &World, pod: &Pod, enable: Option<bool>) -> V2Result<()> {
    if enable != Some(true) {
        return Ok(());
    }
    if pod.cpu.is_some() || !is_nvidia(world, &pod.gpu_type_id) {
        return Err(Problem::bad_request(
            "globalNetworking: requires an NVIDIA GPU pod",
        ));
    }
    let dc = world
        .cloud
        .machine(&pod.machine_id)
        .map(|m| m.data_center_id.clone())
        .unwrap_or_default();
    if !eligible(world).contains(&dc) {
        return Err(Problem::bad_request(format!(
            "globalNetworking: the pod's data center {dc} has no global networking"
        )));
    }
    Ok(())
}
