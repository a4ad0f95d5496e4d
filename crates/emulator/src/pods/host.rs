//! What tests switch on about hosts and prices: start failures (which pods never get their
//! container up), a host other tenants filled (so its stopped pods cannot start again), the
//! price a pod is created at against the catalog's quote, and the free vCPUs of a CPU
//! flavor in one data center.

use super::*;

impl Cloud {
    /// What a start settles: a global networking change asked before it applies, and the
    /// pod's start failure is set from the rules.
    pub(super) fn arm_start(&mut self, id: &str) {
        let Some(p) = self.pod(id) else { return };
        if p.desired == DesiredStatus::Running
            && p.global_networking_next.is_some()
            && let Ok(p) = self.pod_mut(id)
            && let Some(next) = p.global_networking_next.take()
        {
            p.global_networking = next;
        }
        let Some(p) = self.pod(id) else { return };
        let failure = if p.desired == DesiredStatus::Running {
            self.start_rules
                .failure_for(&p.image_name, p.registry.as_deref())
        } else {
            None
        };
        if p.start_failure != failure
            && let Ok(p) = self.pod_mut(id)
        {
            p.start_failure = failure;
        }
    }

    /// The start failures switched on (serverless workers read them too).
    pub fn start_rules(&self) -> &StartRules {
        &self.start_rules
    }

    /// Looks again at the rules for a pod whose image or registry changed without a new
    /// start (a create sets its registry after placing it).
    pub fn rearm_start(&mut self, id: &str) {
        self.arm_start(id);
    }

    /// Every container of `image` that starts from now on fails with `failure`, and so do
    /// the pods of that image whose current start has not completed by `now`.
    pub fn fail_image(&mut self, image: &str, failure: StartFailure, now: Millis, boot_ms: u64) {
        self.start_rules.fail_image(image, failure);
        self.rearm_booting(now, boot_ms, |p| p.image_name == image);
    }

    /// Every pull with credential `registry_id` is refused from now on (pods still booting
    /// included).
    pub fn fail_registry_login(&mut self, registry_id: &str, now: Millis, boot_ms: u64) {
        self.start_rules.refuse_registry(registry_id);
        self.rearm_booting(now, boot_ms, |p| p.registry.as_deref() == Some(registry_id));
    }

    fn rearm_booting(&mut self, now: Millis, boot_ms: u64, matches: impl Fn(&Pod) -> bool) {
        let booting: Vec<String> = self
            .pods()
            .filter(|p| matches(p) && p.started_at.is_some_and(|s| s + boot_ms > now))
            .map(|p| p.id.clone())
            .collect();
        for id in booting {
            self.arm_start(&id);
        }
    }

    /// Other tenants take every free GPU (or vCPU) of the machine pod `pod_id` is tied to,
    /// so starting it again is refused with [`HOST_FULL`] until [`Cloud::free_host`].
    pub fn fill_host(&mut self, pod_id: &str) -> Result<(), PodError> {
        let machine_id = self.host_of(pod_id)?;
        let m = self
            .machine_mut(&machine_id)
            .ok_or_else(|| PodError::NotFound(pod_id.into()))?;
        let taken = std::mem::take(&mut m.free);
        *self.host_holds.entry(machine_id).or_default() += taken;
        Ok(())
    }

    /// The other tenants of pod `pod_id`'s host leave: what they held is free again.
    pub fn free_host(&mut self, pod_id: &str) -> Result<(), PodError> {
        let machine_id = self.host_of(pod_id)?;
        let held = self.host_holds.remove(&machine_id).unwrap_or(0);
        if let Some(m) = self.machine_mut(&machine_id) {
            m.free = (m.free + held).min(m.total);
        }
        Ok(())
    }

    fn host_of(&self, pod_id: &str) -> Result<String, PodError> {
        self.pod(pod_id)
            .map(|p| p.machine_id.clone())
            .ok_or_else(|| PodError::NotFound(pod_id.into()))
    }

    /// Pods created from now on with GPU type or CPU flavor `type_id` cost `factor` times
    /// the catalog's price (which keeps quoting the list price).
    pub fn set_price_markup(&mut self, type_id: &str, factor: f64) -> Result<(), PodError> {
        if self.gpu_type(type_id).is_none() && self.cpu_type(type_id).is_none() {
            return Err(invalid(
                "typeId",
                format!("unknown GPU type or CPU flavor {type_id:?}"),
            ));
        }
        if !(factor.is_finite() && factor > 0.0) {
            return Err(invalid("factor", "must be a positive number"));
        }
        self.markups.insert(type_id.to_string(), factor);
        Ok(())
    }

    /// Makes the free vCPUs of CPU flavor `flavor_id` in `data_center` exactly `vcpus_free`:
    /// machines there that host pods keep them with nothing free, the others go, and fresh
    /// machines (of at most the flavor's largest pod each) hold the free vCPUs.
    pub fn set_cpu_stock(
        &mut self,
        flavor_id: &str,
        data_center: &str,
        vcpus_free: u32,
    ) -> Result<(), PodError> {
        let per_machine = self
            .cpu_type(flavor_id)
            .ok_or_else(|| invalid("flavorId", format!("unknown CPU flavor {flavor_id:?}")))?
            .vcpu_max
            .max(1);
        if !self.data_centers.iter().any(|d| d == data_center) {
            return Err(invalid(
                "dataCenterId",
                format!("unknown data center {data_center:?}"),
            ));
        }
        self.empty_machines(|m| {
            m.cpu_flavor.as_deref() == Some(flavor_id) && m.data_center_id == data_center
        });
        let mut remaining = vcpus_free;
        while remaining > 0 {
            let n = remaining.min(per_machine);
            self.next_ip += 1;
            let machine = Machine {
                id: ids::short(12),
                gpu_type_id: String::new(),
                cpu_flavor: Some(flavor_id.to_string()),
                data_center_id: data_center.to_string(),
                secure: true,
                total: n,
                free: n,
                public_ip: self.next_public_ip(),
                cuda_versions: Vec::new(),
            };
            self.machine_index
                .insert(machine.id.clone(), self.machines.len());
            self.machines.push(machine);
            remaining -= n;
        }
        Ok(())
    }
}
