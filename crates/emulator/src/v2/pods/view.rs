//! How a pod reads in REST v2: its JSON view (env, mounts, ports, SSH, global networking).

use super::*;

pub(super) const SSH_PROXY_HOST: &str = "ssh.emulator.localhost";
pub(super) const DEFAULT_MOUNT_PATH: &str = "/workspace";

/// `KEY=VALUE` pairs as a JSON object.
pub(super) fn env_object(env: &[String]) -> Value {
    env.iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
            (k.to_string(), Value::String(v.to_string()))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

pub(super) fn mounts_of(p: &Pod) -> Value {
    let path = p
        .volume_mount_path
        .clone()
        .unwrap_or_else(|| DEFAULT_MOUNT_PATH.into());
    match &p.network_volume_id {
        Some(volume) => json!({"network": [{"volumeId": volume, "path": path}]}),
        None if p.volume_in_gb > 0 => json!({"persistent": {"size": p.volume_in_gb, "path": path}}),
        None => json!({}),
    }
}

/// The answer to `GET /v2/pods`: every standalone pod of the world, built under its lock.
/// Public so that the emulator benchmark times exactly what the handler does.
pub fn pods_listing(app: &App) -> Value {
    pods_listing_with(app, false)
}

/// `GET /v2/pods`, with the cluster members too when `include_cluster_pods`.
pub fn pods_listing_with(app: &App, include_cluster_pods: bool) -> Value {
    let now = app.clock.now();
    let world = app.world.lock();
    let pods: Vec<Value> = world
        .cloud
        .pods()
        .filter(|p| include_cluster_pods || p.cluster.is_none())
        .map(|p| pod_json(app, &world, p, now))
        .collect();
    json!({ "pods": pods })
}

/// The document's `Pod` object.
pub fn pod_json(app: &App, world: &World, p: &Pod, now: Millis) -> Value {
    let cloud = &world.cloud;
    let status = status_of(p, now, app.config.pod_boot_ms);
    let machine = cloud.machine(&p.machine_id);
    let ip = machine.map(|m| m.public_ip.clone());
    let running = status == PodStatus::Running;
    let booted_at = p.started_at.map(|s| s + app.config.pod_boot_ms);
    let direct = running
        .then(|| public_ssh(cloud, p))
        .flatten()
        .map(|(host, public)| {
            json!({"host": host, "port": public, "username": "root",
                   "command": format!("ssh root@{host} -p {public}")})
        });
    let runtime = running.then(|| {
        let uptime = booted_at.map_or(0, |b| now.saturating_sub(b) / 1000);
        json!({
            "uptime": uptime,
            "gpus": (0..p.gpu_count).map(|i| json!({
                "util": p.gpu_util_percent.map_or((37 + 11 * i) % 100, |u| u.round() as u32),
                "memoryUtil": (21 + 7 * i) % 100,
            })).collect::<Vec<_>>(),
            "cpu": {"util": 12},
            "memory": {"util": 34},
            "ports": p.port_map.iter().map(|(private, public, kind)| json!({
                "private": private, "public": public, "type": kind, "ip": ip,
            })).collect::<Vec<_>>(),
        })
    });
    let mut pod = json!({
        "id": p.id,
        "name": p.name,
        "image": p.image_name,
        "args": p.docker_args,
        "disk": p.container_disk_in_gb,
        "ports": p.ports.split(',').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>(),
        "env": env_object(&p.env),
        "registry": p.registry,
        "status": status.as_str(),
        "actions": status.actions(p.locked),
        "mounts": mounts_of(p),
        "cloud": if machine.is_none_or(|m| m.secure) { "SECURE" } else { "COMMUNITY" },
        "dataCenterId": machine.map(|m| m.data_center_id.clone()),
        "cudaVersion": p.cuda_version,
        "ssh": {
            "proxy": {
                "host": SSH_PROXY_HOST, "port": 22, "username": p.pod_host_id,
                "command": format!("ssh {}@{SSH_PROXY_HOST}", p.pod_host_id),
            },
            "direct": direct,
        },
        "template": Value::Null,
        "cost": if status == PodStatus::Exited { 0.0 } else { p.cost_per_hr },
        "locked": p.locked,
        "globalNetworking": if p.global_networking {
            json!({"enabled": true, "ip": global_ip(&p.id), "internalDns": format!("{}.runpod.internal", p.id)})
        } else {
            json!({"enabled": false})
        },
        "runtime": runtime,
        "createdAt": timestamp(&app.clock, p.created_at),
        "startedAt": if running { booted_at.map(|b| timestamp(&app.clock, b)) } else { None },
    });
    if let Some(m) = &p.cluster {
        let mut cluster = json!({"id": m.cluster_id, "rank": m.rank, "ip": m.ip});
        if let Some(role) = world
            .clusters
            .get(&m.cluster_id)
            .and_then(|c| c.kind.role(m.rank))
        {
            cluster["role"] = json!(role);
        }
        pod["cluster"] = cluster;
    }
    match &p.cpu {
        Some(cpu) => {
            pod["cpu"] = json!({"id": cpu.flavor_id, "vcpuCount": cpu.vcpus, "memory": (p.memory_in_gb as u64).max(1)});
        }
        None => pod["gpu"] = json!({"id": p.gpu_type_id, "count": p.gpu_count}),
    }
    pod
}

/// The host and public port of a pod's published `22/tcp`, if it publishes one.
pub fn public_ssh(cloud: &Cloud, p: &Pod) -> Option<(String, u32)> {
    let (_, public, _) = p
        .port_map
        .iter()
        .find(|(private, _, kind)| *private == 22 && kind == "tcp")?;
    let host = cloud
        .machine(&p.machine_id)
        .map(|m| m.public_ip.clone())
        .unwrap_or_default();
    Some((host, *public))
}

/// A stable private address on the global network, derived from the pod id.
pub(super) fn global_ip(id: &str) -> String {
    let h = id
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!(
        "10.{}.{}.{}",
        (h >> 16) & 0xff,
        (h >> 8) & 0xff,
        (h & 0xfe).max(2)
    )
}
