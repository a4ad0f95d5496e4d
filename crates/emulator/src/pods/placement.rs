//! Where a deploy lands: the data centers it may use, and the first machine of the type
//! and cloud (GPU) or flavor (CPU) with room for it; the platform's capacity error when
//! none has.

use super::*;

impl Cloud {
    /// Data centers a deploy may use, in order of preference (`None`: any).
    pub(super) fn allowed_data_centers(req: &DeployRequest) -> Option<Vec<String>> {
        let mut dcs: Vec<String> = match &req.data_center_id {
            Some(dc) => vec![dc.clone()],
            None => req.data_center_ids.clone(),
        };
        if let Some(vol_dc) = &req.network_volume_dc {
            if dcs.is_empty() {
                dcs.push(vol_dc.clone());
            } else {
                dcs.retain(|d| d == vol_dc);
                if dcs.is_empty() {
                    // The volume pins the pod elsewhere: nothing can place.
                    return Some(Vec::new());
                }
            }
        }
        (!dcs.is_empty()).then_some(dcs)
    }

    /// The first machine, by data center preference, that passes `fits`.
    fn first_fit(
        &self,
        dcs: &Option<Vec<String>>,
        fits: impl Fn(&Machine) -> bool,
    ) -> Option<&Machine> {
        match dcs {
            None => self.machines.iter().find(|m| fits(m)),
            Some(dcs) => dcs.iter().find_map(|dc| {
                self.machines
                    .iter()
                    .find(|m| &m.data_center_id == dc && fits(m))
            }),
        }
    }

    /// The GPU type and count a GPU deploy asks for, checked against the catalog.
    pub(super) fn gpu_ask<'r>(&self, req: &'r DeployRequest) -> Result<GpuAsk<'r>, PodError> {
        let gpu_type_id = req
            .gpu_type_id
            .clone()
            .ok_or_else(|| invalid("gpuTypeId", "required"))?;
        let gpu = self
            .gpu_type(&gpu_type_id)
            .ok_or_else(|| invalid("gpuTypeId", format!("unknown GPU type {gpu_type_id:?}")))?
            .clone();
        let gpu_count = req.gpu_count.unwrap_or(1);
        if gpu_count < 1 || gpu_count as u32 > gpu.max_gpu_count {
            return Err(invalid(
                "gpuCount",
                format!("must be between 1 and {}", gpu.max_gpu_count),
            ));
        }
        Ok(GpuAsk {
            req,
            gpu,
            gpu_count: gpu_count as u32,
        })
    }

    pub(super) fn place_gpu(&self, req: &DeployRequest) -> Result<Placement, PodError> {
        let ask = self.gpu_ask(req)?;
        let dcs = Self::allowed_data_centers(req);
        let machine = self
            .first_fit(&dcs, |m| ask.fits(m))
            .ok_or(PodError::NoCapacity)?;
        Ok(ask.placement_on(machine))
    }

    pub(super) fn place_cpu(
        &self,
        req: &DeployRequest,
        cpu: &CpuRequest,
    ) -> Result<Placement, PodError> {
        let flavor = self
            .cpu_type(&cpu.flavor_id)
            .ok_or_else(|| invalid("cpu.id", format!("unknown CPU flavor {:?}", cpu.flavor_id)))?;
        if cpu.vcpus < flavor.vcpu_min || cpu.vcpus > flavor.vcpu_max {
            return Err(invalid(
                "cpu.vcpuCount",
                format!(
                    "must be between {} and {} for {}",
                    flavor.vcpu_min, flavor.vcpu_max, flavor.id
                ),
            ));
        }
        let dcs = Self::allowed_data_centers(req);
        let machine = self
            .first_fit(&dcs, |m| {
                m.cpu_flavor.as_deref() == Some(flavor.id.as_str())
                    && req.cloud.allows(m.secure)
                    && m.free >= cpu.vcpus
            })
            .ok_or(PodError::NoCapacity)?;
        Ok(Placement {
            machine_id: machine.id.clone(),
            units: cpu.vcpus,
            gpu_type_id: String::new(),
            gpu_count: 0,
            vcpus: cpu.vcpus,
            memory_gb: (f64::from(cpu.vcpus) * flavor.ram_gb_per_vcpu).round() as u32,
            price_per_hr: flavor.secure_price_per_vcpu * f64::from(cpu.vcpus),
            cuda_version: None,
        })
    }
}

/// A GPU deploy's type and count, checked: which machines can take it and what it costs on one.
pub(super) struct GpuAsk<'r> {
    req: &'r DeployRequest,
    gpu: GpuTypeFixture,
    gpu_count: u32,
}

impl GpuAsk<'_> {
    fn cuda_ok(&self, v: &String) -> bool {
        self.req
            .allowed_cuda_versions
            .as_ref()
            .is_none_or(|allowed| allowed.is_empty() || allowed.contains(v))
            && self
                .req
                .min_cuda_version
                .as_deref()
                .is_none_or(|min| cuda_at_least(v, min))
    }

    /// Whether `m` has room for the pod: the type, the cloud, a CUDA version, free GPUs.
    pub(super) fn fits(&self, m: &Machine) -> bool {
        m.gpu_type_id == self.gpu.id
            && self.req.cloud.allows(m.secure)
            && m.cuda_versions.iter().any(|v| self.cuda_ok(v))
            && m.free >= self.gpu_count
    }

    /// The pod on `m`: its GPUs, memory, hourly price and the host's best CUDA version.
    pub(super) fn placement_on(&self, machine: &Machine) -> Placement {
        let price = if machine.secure {
            self.gpu.secure_price
        } else {
            self.gpu.community_price
        }
        .unwrap_or(0.0);
        let cuda_version = machine
            .cuda_versions
            .iter()
            .filter(|v| self.cuda_ok(v))
            .max_by(|a, b| cuda_order(a, b))
            .cloned();
        Placement {
            machine_id: machine.id.clone(),
            units: self.gpu_count,
            gpu_type_id: self.gpu.id.clone(),
            gpu_count: self.gpu_count,
            vcpus: 8 * self.gpu_count,
            memory_gb: self.gpu.memory_in_gb * 2 * self.gpu_count,
            price_per_hr: price * f64::from(self.gpu_count),
            cuda_version,
        }
    }
}
