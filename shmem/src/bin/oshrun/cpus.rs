//! Where PEs run: the CPUs oshrun may use, in the order PEs are pinned to
//! them (hwloc's topology order when built with the `hwloc` feature).

/// The CPUs oshrun may use, in the order PEs are placed on them.
pub(crate) fn cpu_order() -> Vec<usize> {
    let allowed = allowed_cpus();
    #[cfg(feature = "hwloc")]
    {
        let ordered = hwloc_order(&allowed);
        if !ordered.is_empty() {
            return ordered;
        }
    }
    allowed
}

/// The CPUs of oshrun's affinity mask, ascending.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size; CPU_ISSET reads within it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// hwloc's order: the first hardware thread of every core, then the other
/// hardware threads, restricted to `allowed`.
#[cfg(feature = "hwloc")]
fn hwloc_order(allowed: &[usize]) -> Vec<usize> {
    use hwloc2::{ObjectType, Topology};
    let Some(topo) = Topology::new() else {
        return Vec::new();
    };
    let mut order: Vec<usize> = Vec::new();
    if let Ok(cores) = topo.objects_with_type(&ObjectType::Core) {
        for core in cores {
            let first = core
                .cpuset()
                .into_iter()
                .flat_map(|s| s.into_iter())
                .map(|c| c as usize)
                .find(|c| allowed.contains(c));
            order.extend(first);
        }
    }
    if let Ok(pus) = topo.objects_with_type(&ObjectType::PU) {
        for pu in pus {
            let c = pu.os_index() as usize;
            if allowed.contains(&c) && !order.contains(&c) {
                order.push(c);
            }
        }
    }
    order
}
