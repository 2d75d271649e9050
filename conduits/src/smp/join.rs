//! Joining an smp job (the bootstrap of the module documentation) and the
//! control block's barrier and exchange.

use super::*;

/// Opens the control block rank 0 publishes, waiting for it.
pub(super) fn open_published_ctl(
    path: &std::path::Path,
    layout: Layout,
    deadline: Instant,
) -> Result<Region> {
    let mut backoff = Backoff::new();
    loop {
        if let Some(file) = shm::open(path)?
            && file.metadata()?.len() >= layout.total as u64
        {
            let region = Region::map(&file, layout.total, path)?;
            // SAFETY: the mapping is page aligned and `layout.total` long.
            let c = unsafe { Ctl::at(region.ptr(), layout) };
            let mut wait = Backoff::new();
            loop {
                if c.magic().load(Ordering::Acquire) == ctl::MAGIC {
                    if c.total().load(Ordering::Relaxed) != layout.total as u64 {
                        return Err(ConduitError::Bootstrap(format!(
                            "smp: {} has another layout (a different job size or fshmem version)",
                            path.display()
                        )));
                    }
                    return Ok(region);
                }
                if Instant::now() > deadline {
                    break;
                }
                wait.snooze();
            }
        }
        if Instant::now() > deadline {
            return Err(ConduitError::Bootstrap(format!(
                "smp: rank 0 did not publish the job control block {} within {}s",
                path.display(),
                BOOTSTRAP_TIMEOUT.as_secs()
            )));
        }
        backoff.snooze();
        if backoff.is_yielding() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl JobBootstrap for SmpConduit {
    fn barrier(&self) -> Result<()> {
        self.barrier_until(None)
    }

    fn exchange(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        if mine.len() > EXCHANGE_MAX {
            return Err(ConduitError::Bootstrap(format!(
                "exchange contribution of {} bytes exceeds {EXCHANGE_MAX}",
                mine.len()
            )));
        }
        // SAFETY: this PE's slot holds EXCHANGE_MAX bytes and only this PE
        // writes it, between the barriers that bracket reads by others.
        unsafe {
            std::ptr::copy_nonoverlapping(mine.as_ptr(), self.ctl.xchg_data(self.rank), mine.len())
        };
        self.ctl
            .xchg_len(self.rank)
            .store(mine.len() as u64, Ordering::Release);
        self.barrier()?;
        let all = (0..self.size)
            .map(|pe| {
                let len =
                    (self.ctl.xchg_len(pe).load(Ordering::Acquire) as usize).min(EXCHANGE_MAX);
                let mut v = vec![0u8; len];
                // SAFETY: the slot holds at least `len` bytes, written by pe
                // before the barrier and not rewritten before the next one.
                unsafe {
                    std::ptr::copy_nonoverlapping(self.ctl.xchg_data(pe), v.as_mut_ptr(), len)
                };
                v
            })
            .collect();
        self.barrier()?;
        Ok(all)
    }
}

impl SmpConduit {
    /// Joins job `job` with a segment of `segment_len` bytes (the same on
    /// every PE). Collective over the job: returns once every PE has
    /// attached and mapped every segment. A singleton job (no launcher)
    /// works the same way with one PE.
    pub fn attach_len(job: &JobEnv, segment_len: usize) -> Result<SmpConduit> {
        let (rank, size) = (job.rank, job.size);
        if size == 0 || size > MAX_PES || rank >= size {
            return Err(ConduitError::Bootstrap(format!(
                "smp: rank {rank} of {size} PEs is not valid (the smp conduit runs 1..={MAX_PES} PEs)"
            )));
        }
        let deadline = Instant::now() + BOOTSTRAP_TIMEOUT;
        let layout = Layout::new(size);
        let ctl_path = shm::job_file(&job.job_id, "ctl");

        // 1. The control block.
        let (ctl_region, ctl_guard) = if rank == 0 {
            let (file, guard) = shm::create(&ctl_path, layout.total)?;
            let region = Region::map(&file, layout.total, &ctl_path)?;
            // SAFETY: the mapping is page aligned, `layout.total` bytes long,
            // and lives in `_maps` as long as any view derived from it.
            let c = unsafe { Ctl::at(region.ptr(), layout) };
            c.size().store(size as u64, Ordering::Relaxed);
            c.segment_len().store(segment_len as u64, Ordering::Relaxed);
            c.total().store(layout.total as u64, Ordering::Relaxed);
            c.creator()
                .store(std::process::id() as u64, Ordering::Relaxed);
            c.magic().store(ctl::MAGIC, Ordering::Release);
            (region, Some(guard))
        } else {
            (open_published_ctl(&ctl_path, layout, deadline)?, None)
        };
        // SAFETY: as above; the region is moved into `_maps` below and never
        // unmapped before the conduit is dropped.
        let c = unsafe { Ctl::at(ctl_region.ptr(), layout) };
        c.pid(rank)
            .store(std::process::id() as u64, Ordering::Relaxed);
        let mut ctl_region = Some(ctl_region);
        let r = Self::join(job, segment_len, deadline, c, &mut ctl_region, ctl_guard);
        if r.is_err() && ctl_region.is_some() {
            // Tell the peers waiting in the bootstrap barrier (once the
            // conduit exists, its drop does that).
            c.state(rank).store(state::FAILED, Ordering::Release);
        }
        r
    }

    /// Steps 2-4 of the bootstrap, once the control block is mapped.
    pub(super) fn join(
        job: &JobEnv,
        segment_len: usize,
        deadline: Instant,
        c: Ctl,
        ctl_region: &mut Option<Region>,
        ctl_guard: Option<shm::Created>,
    ) -> Result<SmpConduit> {
        let (rank, size) = (job.rank, job.size);
        let (their_size, their_len) = (
            c.size().load(Ordering::Relaxed),
            c.segment_len().load(Ordering::Relaxed),
        );
        if their_size != size as u64 || their_len != segment_len as u64 {
            return Err(ConduitError::Bootstrap(format!(
                "smp: PE {rank} expects {size} PEs with {segment_len}-byte segments, but the \
                 job's control block says {their_size} PEs with {their_len}-byte segments"
            )));
        }

        // 2. This PE's segment.
        let seg_path = shm::job_file(&job.job_id, &rank.to_string());
        let (seg_file, seg_guard) = shm::create(&seg_path, segment_len.max(1))?;
        let own = Region::map_aligned(
            &seg_file,
            segment_len,
            crate::aligned::SEGMENT_ALIGN,
            &seg_path,
        )?;

        let mut conduit = SmpConduit {
            rank,
            size,
            segment_len,
            job_id: job.job_id.clone(),
            ctl: c,
            segs: vec![std::ptr::null_mut(); size].into_boxed_slice(),
            my_requests: c.requests(rank),
            my_replies: c.replies(rank),
            handlers: RwLock::new(HandlerTable::new()),
            request_drain: AtomicBool::new(false),
            reply_drain: AtomicBool::new(false),
            finalized: AtomicBool::new(false),
            leave_hook: 0,
            polls: AtomicU64::new(0),
            last_ctx: AtomicU32::new(0),
            ready: false,
            _maps: Vec::with_capacity(size + 1),
            seg_file,
        };
        conduit.segs[rank] = own.ptr();
        conduit._maps.extend(ctl_region.take());
        conduit._maps.push(own);
        c.state(rank).store(state::ATTACHED, Ordering::Release);
        conduit.leave_hook = conduit.register_leave();

        // Barrier A: every PE has mapped the control block and created its
        // segment.
        conduit.barrier_until(Some(deadline))?;

        // 3. Every peer's segment.
        for pe in (0..size).filter(|&pe| pe != rank) {
            let path = shm::job_file(&job.job_id, &pe.to_string());
            let file = shm::open(&path)?.ok_or_else(|| {
                ConduitError::Bootstrap(format!(
                    "smp: PE {pe}'s segment {} is missing",
                    path.display()
                ))
            })?;
            let len = file.metadata()?.len();
            if len != segment_len.max(1) as u64 {
                return Err(ConduitError::Bootstrap(format!(
                    "smp: PE {pe}'s segment is {len} bytes, expected {segment_len}"
                )));
            }
            let region =
                Region::map_aligned(&file, segment_len, crate::aligned::SEGMENT_ALIGN, &path)?;
            conduit.segs[pe] = region.ptr();
            conduit._maps.push(region);
        }
        if let Some(g) = ctl_guard {
            g.remove();
        }
        // Barrier B: every PE has mapped every segment.
        conduit.barrier_until(Some(deadline))?;
        // 4. Nothing of the job keeps a name any more.
        seg_guard.remove();
        conduit.ready = true;
        Ok(conduit)
    }

    /// The error of a bootstrap that did not assemble in time: the PEs not
    /// attached, and what each one's process was doing (a PE records its
    /// pid once it has mapped the control block).
    #[cold]
    fn not_assembled(&self) -> ConduitError {
        let missing: Vec<usize> = (0..self.size)
            .filter(|&pe| self.ctl.state(pe).load(Ordering::Acquire) == state::ABSENT)
            .collect();
        let doing: Vec<String> = missing
            .iter()
            .map(|&pe| match self.ctl.pid(pe).load(Ordering::Relaxed) {
                0 => format!("PE {pe}: no process has mapped the control block as it"),
                pid => match crate::liveness::process_activity(pid) {
                    Some(a) => format!("PE {pe}: pid {pid}, {a}"),
                    None => format!("PE {pe}: pid {pid}, ended"),
                },
            })
            .collect();
        ConduitError::Bootstrap(format!(
            "smp: PE {} of job {} waited {}s for the job to assemble; PEs not attached: \
             {missing:?} ({})",
            self.rank,
            self.job_id,
            BOOTSTRAP_TIMEOUT.as_secs(),
            doing.join("; ")
        ))
    }

    /// The bootstrap barrier, optionally bounded by `deadline`.
    pub(super) fn barrier_until(&self, deadline: Option<Instant>) -> Result<()> {
        self.progress()?;
        let (count, gen_word) = (self.ctl.bar_count(), self.ctl.bar_gen());
        let generation = gen_word.load(Ordering::Acquire);
        if count.fetch_add(1, Ordering::AcqRel) + 1 == self.size as u64 {
            count.store(0, Ordering::Relaxed);
            gen_word.store(generation.wrapping_add(1), Ordering::Release);
            return Ok(());
        }
        let mut backoff = Backoff::new();
        while gen_word.load(Ordering::Acquire) == generation {
            self.check_global_exit();
            self.drain(true)?;
            if backoff.every(LIVENESS_PERIOD) {
                let mut verdict = self.check_peers();
                if verdict.is_ok() && deadline.is_some_and(|d| Instant::now() > d) {
                    verdict = Err(self.not_assembled());
                }
                if let Err(e) = verdict {
                    if gen_word.load(Ordering::Acquire) != generation {
                        break;
                    }
                    return Err(e);
                }
            }
            if let Some(waited) = backoff.timed_out() {
                let arrived = count.load(Ordering::Acquire);
                let absent: Vec<usize> = (0..self.size)
                    .filter(|&pe| self.ctl.state(pe).load(Ordering::Acquire) == state::ABSENT)
                    .collect();
                return Err(ConduitError::Timeout {
                    what: format!(
                        "the smp bootstrap barrier ({arrived} of {} PEs arrived{})",
                        self.size,
                        if absent.is_empty() {
                            String::new()
                        } else {
                            format!("; PEs {absent:?} never attached")
                        }
                    ),
                    waited,
                });
            }
            backoff.snooze();
        }
        Ok(())
    }
}
