//! The stock as tests and the admin routes change it (free GPUs per type and cloud, the
//! free machines of a type in one data center, a frozen view of it), the lowest price a deploy would pay, and the pods a fixture seeds.

use super::*;

impl Cloud {
    /// Sets the free GPUs of a type in the chosen cloud(s) to `count` each: existing
    /// machines lose their free GPUs (pods keep theirs), then machines are added in
    /// `data_center` (or where the type already has machines) until `count` are free.
    pub fn set_stock(
        &mut self,
        gpu_type_id: &str,
        secure: Option<bool>,
        data_center: Option<&str>,
        count: u32,
    ) -> Result<(), PodError> {
        let gpu = self.stock_target(gpu_type_id, data_center)?;
        let clouds: Vec<bool> = match secure {
            Some(s) => vec![s],
            None => vec![true, false],
        };
        for cloud in clouds {
            let in_scope = |m: &Machine| m.gpu_type_id == gpu_type_id && m.secure == cloud;
            let home = data_center
                .map(str::to_string)
                .or_else(|| {
                    self.machines
                        .iter()
                        .find(|m| in_scope(m))
                        .map(|m| m.data_center_id.clone())
                })
                .or_else(|| self.data_centers.first().cloned())
                .unwrap_or_else(|| "EU-RO-1".into());
            self.empty_machines(in_scope);
            let per_machine = gpu.max_gpu_count.max(1);
            let mut remaining = count;
            while remaining > 0 {
                let n = remaining.min(per_machine);
                let stock = StockFixture {
                    data_center_id: home.clone(),
                    secure_cloud: cloud,
                    machines: 1,
                    gpus_per_machine: n,
                };
                self.add_machines(&gpu, &stock);
                remaining -= n;
            }
        }
        Ok(())
    }

    /// Makes the free stock of a GPU type in one data center and cloud exactly `machines`
    /// machines of `gpus_per_machine` GPUs each (machines that host pods keep them, with
    /// nothing free): the shape a cluster create is placed on.
    pub fn set_machines(
        &mut self,
        gpu_type_id: &str,
        data_center: &str,
        secure: bool,
        machines: u32,
        gpus_per_machine: u32,
    ) -> Result<(), PodError> {
        let gpu = self.stock_target(gpu_type_id, Some(data_center))?;
        if gpus_per_machine == 0 {
            return Err(invalid("gpusPerMachine", "must be at least 1"));
        }
        self.empty_machines(|m| {
            m.gpu_type_id == gpu_type_id && m.secure == secure && m.data_center_id == data_center
        });
        let stock = StockFixture {
            data_center_id: data_center.to_string(),
            secure_cloud: secure,
            machines,
            gpus_per_machine,
        };
        self.add_machines(&gpu, &stock);
        Ok(())
    }

    /// The GPU type a stock change is about, and a check of its data center.
    fn stock_target(
        &self,
        gpu_type_id: &str,
        data_center: Option<&str>,
    ) -> Result<GpuTypeFixture, PodError> {
        let gpu = self
            .gpu_type(gpu_type_id)
            .ok_or_else(|| invalid("gpuTypeId", format!("unknown GPU type {gpu_type_id:?}")))?
            .clone();
        if let Some(dc) = data_center
            && !self.data_centers.iter().any(|d| d == dc)
        {
            return Err(invalid(
                "dataCenterId",
                format!("unknown data center {dc:?}"),
            ));
        }
        Ok(gpu)
    }

    /// Drops the machines in scope that host nothing and leaves the others nothing free.
    pub(super) fn empty_machines(&mut self, in_scope: impl Fn(&Machine) -> bool) {
        let hosting: std::collections::HashSet<String> =
            self.pods.values().map(|p| p.machine_id.clone()).collect();
        self.machines
            .retain(|m| !in_scope(m) || hosting.contains(&m.id));
        for m in self.machines.iter_mut().filter(|m| in_scope(m)) {
            m.free = 0;
        }
        self.reindex();
    }

    /// From now on `lowestPrice` reports stock as it is at this moment, whatever deploys,
    /// stops and [`Cloud::set_stock`] do to the machines, until [`Cloud::thaw_stock_view`].
    pub fn freeze_stock_view(&mut self) {
        self.stock_view = Some(self.machines.clone());
    }

    /// `lowestPrice` reports the machines as they are again.
    pub fn thaw_stock_view(&mut self) {
        self.stock_view = None;
    }

    fn reindex(&mut self) {
        self.machine_index = self
            .machines
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
    }

    /// Price and stock of a GPU type for `gpu_count` GPUs in a cloud.
    pub fn lowest_price(
        &self,
        gpu: &GpuTypeFixture,
        gpu_count: i32,
        secure: Option<bool>,
        data_center: Option<&str>,
    ) -> PriceInfo {
        let gpu_count = gpu_count.max(1) as u32;
        let price = match secure {
            Some(true) => gpu.secure_price,
            Some(false) => gpu.community_price,
            None => match (gpu.secure_price, gpu.community_price) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        };
        let machines: Vec<&Machine> = self
            .stock_machines()
            .iter()
            .filter(|m| {
                m.gpu_type_id == gpu.id
                    && secure.is_none_or(|s| m.secure == s)
                    && data_center.is_none_or(|dc| m.data_center_id == dc)
            })
            .collect();
        let deployable: u32 = machines
            .iter()
            .filter(|m| m.free >= gpu_count)
            .map(|m| m.free / gpu_count)
            .sum();
        let max_on_one = machines.iter().map(|m| m.free).max().unwrap_or(0);
        PriceInfo {
            uninterruptable_price: price.map(|p| p * f64::from(gpu_count)),
            minimum_bid_price: match secure {
                Some(true) => gpu.secure_spot_price,
                _ => gpu.community_spot_price,
            },
            stock_status: stock_status(deployable),
            available_gpu_counts: (1..=max_on_one.min(gpu.max_gpu_count))
                .map(|c| c as i32)
                .collect(),
        }
    }

    /// Deploys the pods named in fixtures.
    pub fn seed_pods(&mut self, pods: &[PodFixture], now: Millis) -> Result<(), String> {
        for p in pods {
            let req = DeployRequest {
                name: Some(p.name.clone()),
                image_name: Some(p.image_name.clone()),
                gpu_type_id: Some(p.gpu_type_id.clone()),
                gpu_count: Some(p.gpu_count as i32),
                cloud: match p.secure_cloud {
                    Some(true) => CloudChoice::Secure,
                    Some(false) => CloudChoice::Community,
                    None => CloudChoice::All,
                },
                ..DeployRequest::default()
            };
            let id = self
                .deploy(req, now)
                .map_err(|e| format!("fixture pod {:?}: {e}", p.name))?
                .id
                .clone();
            if let Some(wanted) = &p.id {
                let seq = self.pod_index.remove(&id).expect("just deployed");
                let pod = Arc::make_mut(self.pods.get_mut(&seq).expect("just deployed"));
                pod.id = wanted.clone();
                pod.pod_host_id = format!("{wanted}-{}", &pod.machine_id[..8]);
                self.pod_index.insert(wanted.clone(), seq);
            }
            if p.stopped {
                let id = p.id.clone().unwrap_or(id);
                self.stop(&id, now).map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
}
