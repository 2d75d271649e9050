//! Joining an ofi job: opening the fabric, registering the segment,
//! exchanging endpoint cards through the bootstrap, and the progress
//! thread that drives the endpoint while the application computes.

use super::*;

impl OfiConduit {
    /// Joins through an explicit bootstrap, with the segment `segment`
    /// asks for. Collective.
    pub fn attach_with(
        rank: usize,
        size: usize,
        segment: SegmentRequest,
        boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<OfiConduit> {
        Self::join(rank, size, segment, boot, settings, None)
    }

    /// [`OfiConduit::attach_with`] for `job`'s PE, naming its endpoint
    /// after the job when the provider is `shm`
    /// ([`crate::job::ofi_shm_name`]: a file of the job, so that a launcher
    /// removes what a PE that died left behind). Collective.
    pub fn attach_job(
        job: &JobEnv,
        segment: SegmentRequest,
        boot: Box<dyn Bootstrap>,
        settings: &Settings,
    ) -> Result<OfiConduit> {
        let shm_name = crate::job::ofi_shm_name(&job.job_id, job.rank);
        Self::join(job.rank, job.size, segment, boot, settings, Some(&shm_name))
    }

    fn join(
        rank: usize,
        size: usize,
        segment: SegmentRequest,
        mut boot: Box<dyn Bootstrap>,
        settings: &Settings,
        shm_name: Option<&str>,
    ) -> Result<OfiConduit> {
        let segment_len = segment.len();
        crate::bootstrap::check_shape("ofi", rank, size, boot.as_ref())?;
        let mut fab = Fabric::open(
            rank,
            settings.ofi_provider.as_deref(),
            settings.ofi_domain.as_deref(),
            shm_name,
        )?;
        let seg = match segment {
            SegmentRequest::Own(len) => Segment::new(len)?,
            SegmentRequest::Over(b) => Segment::over(b)?,
        };
        // SAFETY: the segment mapping lives in `seg`, which the conduit
        // keeps for as long as the Fabric (inside the core) lives, and
        // drops after it (field order of OfiConduit and Drop).
        let (base, key) = unsafe { fab.register(seg.base(), segment_len)? };
        let untrusted = UNTRUSTED_ATOMICS
            .iter()
            .any(|p| fab.caps.provider.split(';').any(|q| q == *p));
        let can = (settings.ofi_atomics == Atomics::Native
            || settings.ofi_atomics == Atomics::Auto && !untrusted)
            && AmoOp::ALL.iter().all(|&op| {
                [AmoWidth::W32, AmoWidth::W64].iter().all(|&w| {
                    let (dt, o, flags) = fi_amo(op, w);
                    fab.atomic_ok(dt, o, flags)
                })
            });
        let me = Card {
            name: fab.name()?,
            base,
            key,
            segment_len: segment_len as u64,
            atomics: can,
        };
        let all = boot.allgather(&me.encode())?;
        let mut cards = Vec::with_capacity(size);
        for (pe, b) in all.iter().enumerate() {
            let c = Card::decode(pe, b)?;
            if c.segment_len != me.segment_len {
                return Err(ConduitError::Bootstrap(format!(
                    "ofi: PE {pe} has a {}-byte segment, PE {rank} {segment_len} bytes",
                    c.segment_len
                )));
            }
            cards.push(c);
        }
        let native_atomics = cards.iter().all(|c| c.atomics);
        let names: Vec<Vec<u8>> = cards.iter().map(|c| c.name.clone()).collect();
        let segs: Vec<(u64, u64)> = cards.iter().map(|c| (c.base, c.key)).collect();
        fab.connect(&names, &segs)?;
        let caps = fab.caps.clone();
        let describe = format!(
            "provider {} (fabric {}, domain {}, mr_mode {:#x}), RMA by fi_write/fi_read{}, atomics {}",
            caps.provider,
            caps.fabric,
            caps.domain,
            caps.mr_mode,
            if caps.delivery_complete {
                " with delivery-complete"
            } else {
                ""
            },
            if native_atomics {
                "by the provider (fi_atomic)"
            } else if settings.ofi_atomics == Atomics::Am {
                "as active messages (FSHMEM_OFI_ATOMICS=am)"
            } else if untrusted && settings.ofi_atomics == Atomics::Auto {
                "as active messages (this provider's atomics are not trusted; FSHMEM_OFI_ATOMICS=native uses them)"
            } else {
                "as active messages (the provider lacks some)"
            }
        );
        let mut engine = Engine::with_config(
            rank as NodeId,
            size,
            SegMemory::new(seg.clone(), segment_len),
            EngineConfig {
                max_in_flight: 64,
                queue_depth: 4096,
            },
        );
        let exit_status = Arc::new(AtomicI64::new(NO_EXIT));
        let es = exit_status.clone();
        engine
            .handlers_mut()
            .register_system(
                EXIT_HANDLER,
                Arc::new(move |_tok, m| {
                    let status = m.args.first().copied().unwrap_or(1) as i32;
                    crate::wait::peer_ends_job(m.src as usize, status);
                    es.store(status as i64, Ordering::Release);
                }),
            )
            .map_err(ConduitError::Am)?;
        let sh = Arc::new(Shared::new());
        let core = Arc::new(Mutex::new(Core::new(fab, engine, sh.clone())?));
        let boot = Arc::new(Mutex::new(boot));
        let stop = Arc::new(AtomicBool::new(false));
        let (c2, sh2, s2, e2, b2) = (
            core.clone(),
            sh.clone(),
            stop.clone(),
            exit_status.clone(),
            boot.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("fshmem-ofi-{rank}"))
            .spawn(move || progress_thread(c2, sh2, s2, e2, b2))?;
        let c = OfiConduit {
            rank,
            size,
            segment_len,
            seg,
            core,
            sh,
            stop,
            thread: Mutex::new(Some(thread)),
            boot,
            native_atomics,
            piece: caps.max_msg.clamp(4096, 1 << 30),
            next_tag: AtomicU64::new(1),
            exit_status,
            finalized: AtomicBool::new(false),
            describe,
        };
        // Every endpoint is up before any traffic starts.
        c.boot().barrier()?;
        Ok(c)
    }
}

/// Drives the endpoint while no other thread does: the core's lock is
/// only tried, and taking it also takes what the contexts queued.
fn progress_thread(
    core: Arc<Mutex<Core>>,
    sh: Arc<Shared>,
    stop: Arc<AtomicBool>,
    exit_status: Arc<AtomicI64>,
    boot: Arc<Mutex<Box<dyn Bootstrap>>>,
) {
    let mut idle_since = Instant::now();
    let mut last_check = Instant::now();
    let try_lock = || crate::ctxq::try_lock(&core, &(), &sh.queued);
    while !stop.load(Ordering::Acquire) {
        let worked = try_lock().is_some_and(|mut c| c.progress());
        let status = exit_status.load(Ordering::Acquire);
        if status != NO_EXIT {
            // A peer ended the job: let the acknowledgements go, then leave.
            if let Some(mut c) = try_lock() {
                c.drain(Duration::from_millis(200));
            }
            crate::wait::exit_job(status as i32);
        }
        let now = Instant::now();
        if now.duration_since(last_check) >= Duration::from_millis(20) {
            last_check = now;
            let r = boot.try_lock().ok().map(|mut b| b.check());
            if let Some(Err(e)) = r {
                crate::ctxq::lock(&core, &(), &sh.queued).fail(e);
            }
        }
        if worked {
            idle_since = now;
            continue;
        }
        // Poll busily for a moment after work, then ever more lazily.
        let idle = now.duration_since(idle_since);
        if idle < Duration::from_micros(200) {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}
