//! The libfabric objects of one PE: provider choice, fabric, domain, one
//! reliable-datagram (`FI_EP_RDM`) endpoint with its address vector,
//! completion queue and completion counter, and the symmetric segment
//! registered once. [`Fabric`] owns them, closes them in reverse order,
//! and turns every libfabric error into a message naming the PE, the call
//! and `fi_strerror`'s text.
//!
//! Memory-registration modes: the hints say this conduit supports
//! `FI_MR_VIRT_ADDR` (remote addresses are then the target's virtual
//! addresses, else offsets into its segment), `FI_MR_ALLOCATED`,
//! `FI_MR_PROV_KEY` (the provider picks the key, exchanged with the
//! address) and `FI_MR_ENDPOINT` (the region is bound to the endpoint and
//! enabled after it). It does not offer `FI_MR_LOCAL` or `FI_MR_RAW`: a
//! provider that requires them is not chosen, and if it is the only one
//! the error says so.

use super::api::{self, Api};
use super::sys::*;
use crate::error::{ConduitError, Result};
use std::ffi::{CStr, CString, c_void};

/// Which operations a provider gave the conduit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caps {
    /// `prov_name` of the chosen `fi_info` (e.g. `tcp;ofi_rxm`).
    pub provider: String,
    /// The domain (interface) name.
    pub domain: String,
    /// The fabric name.
    pub fabric: String,
    /// The provider's memory-registration mode bits.
    pub mr_mode: u32,
    /// Largest message or RMA transfer.
    pub max_msg: usize,
    /// Whether completions of writes report delivery at the target
    /// (`FI_DELIVERY_COMPLETE` accepted).
    pub delivery_complete: bool,
    /// Whether the provider offered `FI_ATOMIC`.
    pub atomic: bool,
}

/// A peer as the address vector and its registered segment know it.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    /// Its address in the address vector.
    pub addr: fi_addr_t,
    /// Remote address of its segment byte 0 (its virtual address under
    /// `FI_MR_VIRT_ADDR`, else 0).
    pub base: u64,
    /// Its segment's remote key.
    pub key: u64,
}

/// The objects of one PE. Raw libfabric handles: every use is through
/// [`super::api`]; the conduit serialises calls (see `mod.rs`).
pub struct Fabric {
    pub(crate) api: &'static Api,
    pub(crate) rank: usize,
    info: *mut fi_info,
    fabric: *mut fid_fabric,
    pub(crate) domain: *mut fid_domain,
    pub(crate) ep: *mut fid_ep,
    av: *mut fid_av,
    pub(crate) cq: *mut fid_cq,
    pub(crate) cntr: *mut fid_cntr,
    mr: *mut fid_mr,
    /// What the provider offers.
    pub caps: Caps,
    /// Every PE, by rank (filled by [`Fabric::connect`]).
    pub peers: Vec<Peer>,
}

// SAFETY: the handles are libfabric objects opened with FI_THREAD_SAFE
// (or used under the conduit's lock): they may be used from any thread.
unsafe impl Send for Fabric {}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric")
            .field("rank", &self.rank)
            .field("caps", &self.caps)
            .finish()
    }
}

/// The memory-registration modes this conduit handles.
const MR_MODES: u32 = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;

fn cstr(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's strings in fi_info are NUL-terminated.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl Fabric {
    /// An error naming this PE, the call and libfabric's text for `rc`.
    pub(crate) fn err(&self, call: &str, rc: isize) -> ConduitError {
        fail(self.api, self.rank, call, rc)
    }

    /// Chooses a provider (`provider`, e.g. `tcp;ofi_rxm`, or the first
    /// `fi_getinfo` offers), on `domain` if given, and opens fabric,
    /// domain, endpoint, address vector, completion queue and counter.
    ///
    /// `shm_name` names the endpoint when the provider is `shm`: its
    /// shared-memory region is then `/dev/shm/<shm_name>`, which the
    /// launcher removes with the job's other files if the PE dies. (Left
    /// to itself, shm names a region after the process id, and a region a
    /// killed process left behind refuses every later process that gets
    /// the same pid: `fi_enable` fails with "Device or resource busy".)
    pub fn open(
        rank: usize,
        provider: Option<&str>,
        domain: Option<&str>,
        shm_name: Option<&str>,
    ) -> Result<Fabric> {
        let api = api::api().map_err(|e| ConduitError::Bootstrap(format!("PE {rank}: {e}")))?;
        let (maj, min) = api.version();
        if (maj, min) < (1, 17) {
            return Err(ConduitError::Bootstrap(format!(
                "PE {rank}: libfabric {maj}.{min} is older than 1.17, the oldest this conduit supports"
            )));
        }
        // With FI_ATOMIC first; a provider without atomics (tcp;ofi_rxm)
        // is taken without, and atomics travel as active messages. With
        // delivery-complete writes first, then without.
        let mut last = 0isize;
        let mut found = None;
        'outer: for atomic in [true, false] {
            for delivery in [true, false] {
                match getinfo(api, provider, domain, atomic, delivery) {
                    Ok(info) => {
                        found = Some((info, atomic, delivery));
                        break 'outer;
                    }
                    Err(rc) => last = rc,
                }
            }
        }
        let Some((info, atomic, delivery)) = found else {
            let which = provider.map_or("any provider".to_string(), |p| format!("provider {p:?}"));
            return Err(ConduitError::Bootstrap(format!(
                "PE {rank}: fi_getinfo: {which}{} offers no reliable-datagram endpoint with \
                 messages and RMA under memory-registration modes this conduit handles \
                 (FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_ENDPOINT): {} \
                 (fi_info -l lists the providers; set FSHMEM_OFI_PROVIDER)",
                domain
                    .map(|d| format!(" on domain {d:?}"))
                    .unwrap_or_default(),
                api.strerror(last)
            )));
        };
        let mut f = Fabric {
            api,
            rank,
            info,
            fabric: std::ptr::null_mut(),
            domain: std::ptr::null_mut(),
            ep: std::ptr::null_mut(),
            av: std::ptr::null_mut(),
            cq: std::ptr::null_mut(),
            cntr: std::ptr::null_mut(),
            mr: std::ptr::null_mut(),
            caps: Caps {
                provider: String::new(),
                domain: String::new(),
                fabric: String::new(),
                mr_mode: 0,
                max_msg: 0,
                delivery_complete: delivery,
                atomic,
            },
            peers: Vec::new(),
        };
        // SAFETY: `info` is the fi_info fi_getinfo returned; its attribute
        // pointers are set for every result.
        unsafe {
            let i = &*info;
            f.caps.provider = cstr((*i.fabric_attr).prov_name);
            f.caps.fabric = cstr((*i.fabric_attr).name);
            f.caps.domain = cstr((*i.domain_attr).name);
            f.caps.mr_mode = (*i.domain_attr).mr_mode as u32;
            f.caps.max_msg = (*i.ep_attr).max_msg_size;
        }
        let name = match shm_name {
            Some(n) if f.caps.provider == "shm" => Some(
                CString::new(n)
                    .map_err(|_| ConduitError::Bootstrap(format!("PE {rank}: shm name {n:?}")))?,
            ),
            _ => None,
        };
        f.open_objects(name.as_deref())?;
        Ok(f)
    }

    fn open_objects(&mut self, name: Option<&CStr>) -> Result<()> {
        let ck = |f: &Fabric, call: &str, rc: i32| -> Result<()> {
            if rc != 0 {
                Err(f.err(call, rc as isize))
            } else {
                Ok(())
            }
        };
        // SAFETY: `info` is live; each out pointer is a field of self.
        let rc = unsafe {
            (self.api.fabric)(
                (*self.info).fabric_attr,
                &mut self.fabric,
                std::ptr::null_mut(),
            )
        };
        ck(self, "fi_fabric", rc)?;
        // SAFETY: `fabric` was just opened; `info` is live.
        let rc = unsafe { api::domain(self.fabric, self.info, &mut self.domain) };
        ck(self, "fi_domain", rc)?;
        // SAFETY: `domain` is open; `info` is live.
        let rc = unsafe { api::endpoint(self.domain, self.info, &mut self.ep) };
        ck(self, "fi_endpoint", rc)?;
        // SAFETY: fi_av_attr is plain data; zero is its default.
        let mut av_attr: fi_av_attr = unsafe { std::mem::zeroed() };
        av_attr.type_ = FI_AV_TABLE;
        // SAFETY: `domain` is open; the attribute lives across the call.
        let rc = unsafe { api::av_open(self.domain, &mut av_attr, &mut self.av) };
        ck(self, "fi_av_open", rc)?;
        // SAFETY: as above.
        let mut cq_attr: fi_cq_attr = unsafe { std::mem::zeroed() };
        cq_attr.format = FI_CQ_FORMAT_MSG;
        cq_attr.wait_obj = FI_WAIT_NONE;
        cq_attr.size = 4096;
        // SAFETY: `domain` is open.
        let rc = unsafe { api::cq_open(self.domain, &mut cq_attr, &mut self.cq) };
        ck(self, "fi_cq_open", rc)?;
        // SAFETY: as above.
        let mut cntr_attr: fi_cntr_attr = unsafe { std::mem::zeroed() };
        cntr_attr.events = FI_CNTR_EVENTS_COMP;
        cntr_attr.wait_obj = FI_WAIT_NONE;
        // SAFETY: `domain` is open.
        let rc = unsafe { api::cntr_open(self.domain, &mut cntr_attr, &mut self.cntr) };
        ck(self, "fi_cntr_open", rc)?;
        // SAFETY: every object is open; binding takes fid pointers.
        unsafe {
            let ep = &mut (*self.ep).fid as *mut fid;
            let rc = api::bind(ep, &mut (*self.av).fid, 0);
            ck(self, "fi_ep_bind(av)", rc)?;
            let rc = api::bind(ep, &mut (*self.cq).fid, (FI_TRANSMIT | FI_RECV) as u64);
            ck(self, "fi_ep_bind(cq)", rc)?;
            let rc = api::bind(ep, &mut (*self.cntr).fid, (FI_WRITE | FI_READ) as u64);
            ck(self, "fi_ep_bind(cntr)", rc)?;
            if let Some(n) = name {
                let b = n.to_bytes_with_nul();
                let rc = api::setname(self.ep, b.as_ptr().cast_mut().cast(), b.len());
                ck(self, "fi_setname", rc)?;
            }
            let rc = api::enable(ep);
            ck(self, "fi_enable", rc)?;
        }
        Ok(())
    }

    /// This endpoint's provider address (`fi_getname`).
    pub fn name(&self) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 256];
        let mut len = buf.len();
        // SAFETY: `ep` is enabled; `buf` has `len` writable bytes.
        let mut rc = unsafe { api::getname(self.ep, buf.as_mut_ptr().cast(), &mut len) };
        if rc == -(FI_ETOOSMALL as i32) && len <= super::MAX_NAME {
            buf.resize(len, 0);
            // SAFETY: as above, with the size the provider asked for.
            rc = unsafe { api::getname(self.ep, buf.as_mut_ptr().cast(), &mut len) };
        }
        if rc != 0 {
            return Err(self.err("fi_getname", rc as isize));
        }
        buf.truncate(len);
        Ok(buf)
    }

    /// Registers `base..base+len` (the segment) for remote reads, writes
    /// and atomics; returns (remote base, key) for peers.
    ///
    /// # Safety
    /// The range stays mapped while this `Fabric` lives.
    pub unsafe fn register(&mut self, base: *mut u8, len: usize) -> Result<(u64, u64)> {
        let access = (FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE) as u64;
        let requested = self.rank as u64 + 1;
        // SAFETY: `domain` is open; the caller keeps the range mapped.
        let rc = unsafe {
            api::mr_reg(
                self.domain,
                base as *const c_void,
                len,
                access,
                requested,
                &mut self.mr,
            )
        };
        if rc != 0 {
            return Err(self.err("fi_mr_reg", rc as isize));
        }
        if self.caps.mr_mode & FI_MR_ENDPOINT != 0 {
            // SAFETY: `mr` and `ep` are live.
            unsafe {
                let rc = api::bind(&mut (*self.mr).fid, &mut (*self.ep).fid, 0);
                if rc != 0 {
                    return Err(self.err("fi_mr_bind", rc as isize));
                }
                let rc = api::enable(&mut (*self.mr).fid);
                if rc != 0 {
                    return Err(self.err("fi_mr_enable", rc as isize));
                }
            }
        }
        // SAFETY: `mr` is live; fi_mr_key reads its key field.
        let key = unsafe { (*self.mr).key };
        let remote = if self.caps.mr_mode & FI_MR_VIRT_ADDR != 0 {
            base as u64
        } else {
            0
        };
        Ok((remote, key))
    }

    /// Inserts every PE's address (`names[r]`) into the address vector and
    /// records the peers' segments.
    pub fn connect(&mut self, names: &[Vec<u8>], segs: &[(u64, u64)]) -> Result<()> {
        self.peers.clear();
        for (pe, (name, &(base, key))) in names.iter().zip(segs).enumerate() {
            let mut a: fi_addr_t = 0;
            // SAFETY: `av` is open; `name` is one provider address.
            let rc = unsafe { api::av_insert(self.av, name.as_ptr().cast(), 1, &mut a) };
            if rc != 1 {
                let rc = if rc < 0 {
                    rc as isize
                } else {
                    -(FI_EINVAL as isize)
                };
                return Err(self.err(&format!("fi_av_insert of PE {pe}'s address"), rc));
            }
            self.peers.push(Peer { addr: a, base, key });
        }
        Ok(())
    }

    /// Whether the provider performs atomic `op` on `dt`, in the form
    /// `flags` (0, `FI_FETCH_ATOMIC` or `FI_COMPARE_ATOMIC`) names.
    pub fn atomic_ok(&self, dt: fi_datatype, op: fi_op, flags: u64) -> bool {
        if !self.caps.atomic {
            return false;
        }
        // SAFETY: zero is a valid fi_atomic_attr.
        let mut attr: fi_atomic_attr = unsafe { std::mem::zeroed() };
        // SAFETY: `domain` is open; `attr` is writable.
        let rc = unsafe { api::query_atomic(self.domain, dt, op, &mut attr, flags) };
        rc == 0 && attr.count >= 1
    }

    /// Completed RMA and atomic operations: (succeeded, failed).
    pub fn counted(&self) -> (u64, u64) {
        // SAFETY: `cntr` is open.
        unsafe { (api::cntr_read(self.cntr), api::cntr_readerr(self.cntr)) }
    }
}

/// An error naming PE `rank`, the call and libfabric's text for `rc`.
pub(crate) fn fail(api: &Api, rank: usize, call: &str, rc: isize) -> ConduitError {
    ConduitError::Io(format!(
        "PE {rank}: {call} failed: {} ({rc})",
        api.strerror(rc)
    ))
}

fn getinfo(
    api: &Api,
    provider: Option<&str>,
    domain: Option<&str>,
    atomic: bool,
    delivery: bool,
) -> std::result::Result<*mut fi_info, isize> {
    // SAFETY: fi_dupinfo(NULL) is fi_allocinfo: a zeroed fi_info with
    // its attribute structures allocated.
    let hints = unsafe { (api.dupinfo)(std::ptr::null()) };
    if hints.is_null() {
        return Err(-(FI_ENOMEM as isize));
    }
    // The strings handed to the hints are freed by fi_freeinfo, so they
    // are allocated with the C allocator.
    let dup = |s: &str| -> *mut std::ffi::c_char {
        let c = CString::new(s).unwrap_or_default();
        // SAFETY: strdup copies a NUL-terminated string with malloc.
        unsafe { libc::strdup(c.as_ptr()) }
    };
    let mut caps = (FI_MSG | FI_RMA) as u64;
    if atomic {
        caps |= FI_ATOMIC as u64;
    }
    // SAFETY: `hints` and its attribute structs were just allocated.
    unsafe {
        let h = &mut *hints;
        h.caps = caps;
        h.mode = 0;
        h.addr_format = FI_FORMAT_UNSPEC;
        (*h.ep_attr).type_ = FI_EP_RDM;
        (*h.domain_attr).mr_mode = MR_MODES as i32;
        (*h.domain_attr).threading = FI_THREAD_SAFE;
        if delivery {
            (*h.tx_attr).op_flags = FI_DELIVERY_COMPLETE as u64;
        }
        if let Some(p) = provider {
            (*h.fabric_attr).prov_name = dup(p);
        }
    }
    let mut info = std::ptr::null_mut();
    // SAFETY: `hints` is a complete fi_info; `info` receives a list.
    let rc = unsafe {
        (api.getinfo)(
            api::API_VERSION,
            std::ptr::null(),
            std::ptr::null(),
            0,
            hints,
            &mut info,
        )
    };
    // SAFETY: `hints` came from fi_dupinfo and is not used again.
    unsafe { (api.freeinfo)(hints) };
    if rc != 0 {
        return Err(rc as isize);
    }
    if info.is_null() {
        return Err(-(FI_ENODATA as isize));
    }
    // Keep the first result on the domain asked for (providers layered
    // over others, such as ofi_rxm, do not filter by the hints' domain).
    let mut pick = info;
    if let Some(d) = domain {
        // SAFETY: walking the list fi_getinfo returned; every entry has a
        // domain attribute.
        while !pick.is_null() && unsafe { cstr((*(*pick).domain_attr).name) } != d {
            // SAFETY: `pick` is a non-NULL entry of that list.
            pick = unsafe { (*pick).next };
        }
    }
    if pick.is_null() {
        // SAFETY: the list is not used again.
        unsafe { (api.freeinfo)(info) };
        return Err(-(FI_ENODATA as isize));
    }
    // SAFETY: `pick` is an entry of the list; fi_dupinfo copies that one
    // entry (its `next` is not followed).
    let first = unsafe { (api.dupinfo)(pick) };
    // SAFETY: the list is not used again.
    unsafe { (api.freeinfo)(info) };
    if first.is_null() {
        return Err(-(FI_ENOMEM as isize));
    }
    Ok(first)
}

impl Drop for Fabric {
    fn drop(&mut self) {
        // SAFETY: each handle is either NULL or open and used by nothing
        // else now; closed in the reverse order of opening.
        unsafe {
            for f in [
                self.mr.cast::<fid>(),
                self.ep.cast::<fid>(),
                self.cntr.cast::<fid>(),
                self.cq.cast::<fid>(),
                self.av.cast::<fid>(),
                self.domain.cast::<fid>(),
                self.fabric.cast::<fid>(),
            ] {
                if !f.is_null() {
                    api::close(f);
                }
            }
            if !self.info.is_null() {
                (self.api.freeinfo)(self.info);
            }
        }
    }
}
