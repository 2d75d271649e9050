//! Unit tests of the fpga conduit against in-process devsim boards.
//!
//! One file (about 1,000 lines) for one job: every test here starts boards
//! through the one `TestBoards` harness at its top and drives conduits
//! attached to them.

use super::*;
use devsim::compute::GemmCore;
use devsim::link::ReliableLink;
use devsim::{BoardModel, Fault};
use gasnet_core::cmd::Status;
use gasnet_core::impair::Impair;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Boards running on threads, each in its own temporary directory.
pub(crate) struct TestBoards {
    pub dirs: Vec<PathBuf>,
    stops: Vec<Arc<AtomicBool>>,
    pauses: Vec<Arc<AtomicBool>>,
    threads: Vec<Option<JoinHandle<()>>>,
}

impl TestBoards {
    pub fn start(name: &str, n: usize, fault: Fault) -> TestBoards {
        Self::start_with(name, n, fault, Duration::from_secs(10), None)
    }

    /// As `start`, with the links' peer timeout and impairment.
    pub fn start_with(
        name: &str,
        n: usize,
        fault: Fault,
        peer_timeout: Duration,
        impair: Option<Impair>,
    ) -> TestBoards {
        Self::start_full(name, n, fault, peer_timeout, impair, devsim::core::DOZE_MAX)
    }

    /// As `start_with`, the boards dozing at most `longest_doze` at a time.
    pub fn start_full(
        name: &str,
        n: usize,
        fault: Fault,
        peer_timeout: Duration,
        impair: Option<Impair>,
        longest_doze: Duration,
    ) -> TestBoards {
        Self::start_boards(name, n, fault, peer_timeout, impair, longest_doze, true)
    }

    /// As `start`, the boards with their compute core or without.
    pub fn start_compute(name: &str, n: usize, compute: bool) -> TestBoards {
        Self::start_boards(
            name,
            n,
            Fault::None,
            Duration::from_secs(10),
            None,
            devsim::core::DOZE_MAX,
            compute,
        )
    }

    fn start_boards(
        name: &str,
        n: usize,
        fault: Fault,
        peer_timeout: Duration,
        impair: Option<Impair>,
        longest_doze: Duration,
        compute: bool,
    ) -> TestBoards {
        let root = std::env::temp_dir().join(format!("fshmem-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut links: Vec<ReliableLink> = (0..n)
            .map(|i| ReliableLink::bind(i as u16, peer_timeout, impair).unwrap())
            .collect();
        let ports: Vec<[u16; 2]> = links.iter().map(|l| l.local_ports().unwrap()).collect();
        let mut stops = Vec::new();
        let mut pauses = Vec::new();
        let mut dirs = Vec::new();
        let mut threads = Vec::new();
        for (i, mut link) in links.drain(..).enumerate() {
            link.set_peers(&ports);
            let dir = root.join(format!("board{i}"));
            let mut b = BoardModel::create(
                &dir,
                i as u16,
                n as u16,
                64 << 20,
                Box::new(link),
                compute.then(|| Box::new(GemmCore::new()) as Box<dyn devsim::compute::ComputeCore>),
                fault,
            )
            .unwrap();
            dirs.push(dir);
            let stop = Arc::new(AtomicBool::new(false));
            stops.push(stop.clone());
            let pause = Arc::new(AtomicBool::new(false));
            pauses.push(pause.clone());
            threads.push(Some(std::thread::spawn(move || {
                b.run_dozing(&stop, &pause, longest_doze)
            })));
        }
        TestBoards {
            dirs,
            stops,
            pauses,
            threads,
        }
    }

    /// Freezes board `i` (`true`) or lets it run again (`false`).
    pub fn pause_board(&self, i: usize, pause: bool) {
        self.pauses[i].store(pause, Ordering::Release);
    }

    /// Asks board `i` to stop, waking it if it dozes (it sees the stop
    /// when it wakes).
    fn ask_stop(&self, i: usize) {
        self.stops[i].store(true, Ordering::SeqCst);
        if let Some(w) = super::bar::Waker::open(&self.dirs[i]) {
            w.kick();
        }
    }

    /// Stops board `i` (it falls silent: its sockets stay open, unread).
    pub fn stop_board(&mut self, i: usize) {
        self.ask_stop(i);
        if let Some(t) = self.threads[i].take() {
            let _ = t.join();
        }
    }
}

impl Drop for TestBoards {
    fn drop(&mut self) {
        for i in 0..self.stops.len() {
            self.ask_stop(i);
        }
        for t in self.threads.drain(..).flatten() {
            let _ = t.join();
        }
        if let Some(root) = self.dirs.first().and_then(|d| d.parent()) {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

fn open(b: &TestBoards, rank: usize, seg: usize) -> FpgaConduit {
    FpgaConduit::open(
        Device::Devsim(b.dirs[rank].clone()),
        rank,
        b.dirs.len(),
        seg,
    )
    .unwrap()
}

#[test]
fn single_board_attach_and_health_check() {
    let b = TestBoards::start("single", 1, Fault::None);
    let c = open(&b, 0, 1 << 20);
    c.health_check().unwrap();
    c.put(CtxId::DEFAULT, 0, 64, b"hello").unwrap();
    let mut back = [0u8; 5];
    c.get(CtxId::DEFAULT, 0, 64, &mut back).unwrap();
    assert_eq!(&back, b"hello");
    let old = c
        .atomic(CtxId::DEFAULT, 0, 128, AmoOp::FetchAdd, AmoWidth::W64, 7, 0)
        .unwrap();
    assert_eq!(old, 0);
    assert_eq!(
        c.atomic(CtxId::DEFAULT, 0, 128, AmoOp::Fetch, AmoWidth::W64, 0, 0)
            .unwrap(),
        7
    );
    c.quiet(CtxId::DEFAULT).unwrap();
}

/// Runs `body` as PE `rank` of `n` on threads, one conduit per board.
fn spmd(name: &str, n: usize, body: impl Fn(&FpgaConduit) + Send + Sync + 'static) {
    spmd_on(TestBoards::start(name, n, Fault::None), body)
}

/// As [`spmd`], on boards already started.
fn spmd_on(b: TestBoards, body: impl Fn(&FpgaConduit) + Send + Sync + 'static) {
    let n = b.dirs.len();
    let body = Arc::new(body);
    let dirs = b.dirs.clone();
    let ts: Vec<_> = (0..n)
        .map(|r| {
            let body = body.clone();
            let dir = dirs[r].clone();
            std::thread::spawn(move || {
                let c = FpgaConduit::open(Device::Devsim(dir), r, n, 1 << 20).unwrap();
                c.health_check().unwrap();
                c.barrier().unwrap();
                body(&c);
                c.finalize().unwrap();
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
}

#[test]
fn two_boards_put_get_barrier_exchange() {
    spmd("pair", 2, |c| {
        let me = c.rank();
        let peer = 1 - me;
        let data: Vec<u8> = (0..100_000u32).map(|i| (i as u8) ^ me as u8).collect();
        c.put(CtxId::DEFAULT, peer, 4096, &data).unwrap();
        c.put(CtxId::DEFAULT, peer, 8, &[me as u8 + 1; 8]).unwrap();
        c.barrier().unwrap();
        let mut back = vec![0u8; 100_000];
        c.get(CtxId::DEFAULT, peer, 4096, &mut back).unwrap();
        let want: Vec<u8> = (0..100_000u32).map(|i| (i as u8) ^ me as u8).collect();
        assert_eq!(back, want);
        // SAFETY: reading this PE's own segment.
        let local = unsafe { *c.local_segment().add(8) };
        assert_eq!(local, peer as u8 + 1);
        let all = c.exchange(&[me as u8; 3]).unwrap();
        assert_eq!(all, vec![vec![0u8; 3], vec![1u8; 3]]);
        c.atomic(CtxId::DEFAULT, 0, 256, AmoOp::Add, AmoWidth::W32, 1, 0)
            .unwrap();
        c.barrier().unwrap();
        assert_eq!(
            c.atomic(CtxId::DEFAULT, 0, 256, AmoOp::Fetch, AmoWidth::W32, 0, 0)
                .unwrap(),
            2
        );
    });
}

/// Waits (at most 20 s) until the board in `dir` announces that it dozes.
fn wait_until_dozing(dir: &std::path::Path) {
    let word = super::bar::Bar::map(&dir.join(gasnet_core::cmd::BOARD_FILE_DOZE)).unwrap();
    let start = Instant::now();
    while word.read32(0) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "board {} never dozed",
            dir.display()
        );
        std::thread::yield_now();
    }
}

/// `spec/registers.md` §13: boards whose dozes last up to a minute still
/// come up (the hosts' `CTRL` stores wake them) and serve a put + quiet
/// and a get between them at once. The host's doorbell wakes its board
/// (the wake socket), and the board's packet wakes its peer (the link
/// socket); were either woken only by the end of its doze, bring-up would
/// time out after 20 s and the operations would take a minute.
#[test]
fn dozing_boards_are_woken_by_a_doorbell_and_by_a_peers_packet() {
    let b = TestBoards::start_full(
        "doze",
        2,
        Fault::None,
        Duration::from_secs(120),
        None,
        Duration::from_secs(60),
    );
    let dirs = b.dirs.clone();
    // Both boards doze before their hosts reset and enable them.
    for d in &dirs {
        wait_until_dozing(d);
    }
    spmd_on(b, move |c| {
        if c.rank() == 0 {
            wait_until_dozing(&dirs[0]);
            wait_until_dozing(&dirs[1]);
            let start = Instant::now();
            c.put(CtxId::DEFAULT, 1, 64, &[0x5a; 8]).unwrap();
            c.quiet(CtxId::DEFAULT).unwrap();
            let mut back = [0u8; 8];
            c.get(CtxId::DEFAULT, 1, 64, &mut back).unwrap();
            let took = start.elapsed();
            assert_eq!(back, [0x5a; 8]);
            assert!(
                took < Duration::from_secs(30),
                "a put + quiet and a get between dozing boards took {took:?}: a board was \
                 not woken"
            );
        }
        c.barrier().unwrap();
    });
}

fn wait_completion(c: &FpgaConduit, rings: &mut super::queue::Rings) -> Completion {
    let start = Instant::now();
    loop {
        if let Some(r) = rings.poll_cq(&c.board().bar0) {
            return r.unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no completion");
        std::thread::yield_now();
    }
}

#[test]
fn malformed_descriptors_get_error_completions_and_the_queue_runs_on() {
    let b = TestBoards::start("malformed", 1, Fault::None);
    let c = open(&b, 0, 1 << 20);
    let bar0 = &c.board().bar0;
    // Drive the rings directly (the conduit's own state is idle).
    let mut rings = super::queue::Rings::after_reset(bar0);
    // A zeroed slot (opcode 0), a Medium AM over 4096 bytes, a Nop to a bad
    // target flag, then a good Nop: each gets its completion in order.
    let zero = [0u8; 64];
    let mut bad_len = [0u8; 64];
    bad_len[0] = cmd::opcode::AM_MEDIUM_REQUEST;
    bad_len[1] = cmd::flags::COMPLETION;
    bad_len[4] = 0x01;
    bad_len[5] = 0x50;
    bad_len[8] = 65;
    bad_len[12..16].copy_from_slice(&5000u32.to_le_bytes());
    let put_far = cmd::encode(&Descriptor::Put {
        common: Common {
            tag: 9,
            completion: true,
            fence_before: false,
        },
        target: 7,
        remote: 0,
        source: cmd::PutSource::Inline(Inline::new(&[1]).unwrap()),
    });
    let nop = cmd::encode(&Descriptor::Nop {
        common: Common {
            tag: 77,
            completion: true,
            fence_before: false,
        },
    });
    for s in [zero, bad_len, put_far, nop] {
        assert!(rings.try_submit(bar0, &[s]));
    }
    let c1 = wait_completion(&c, &mut rings);
    assert_eq!((c1.status, c1.sq_index), (Status::BadOpcode, 0));
    let c2 = wait_completion(&c, &mut rings);
    assert_eq!(
        (c2.status, c2.detail, c2.tag),
        (Status::BadLength, 5000, 0x5001)
    );
    let c3 = wait_completion(&c, &mut rings);
    assert_eq!((c3.status, c3.detail, c3.tag), (Status::BadTarget, 7, 9));
    let c4 = wait_completion(&c, &mut rings);
    assert_eq!((c4.status, c4.tag), (Status::Ok, 77));
    assert!(bar0.read64(regs::CNT_ERRORS) >= 3);
}

#[test]
fn a_full_queue_applies_back_pressure_without_overwriting() {
    let b = TestBoards::start("full", 2, Fault::None);
    let c0 = open(&b, 0, 1 << 20);
    let c1 = open(&b, 1, 1 << 20);
    // Thousands of puts (far more than the 255 free slots) with 1 µs
    // between board steps being irrelevant: every one must land, in order
    // per word, and the last value written to each word must win.
    let n = 5000u64;
    for i in 0..n {
        c0.put(CtxId::DEFAULT, 1, 8 * (i % 64) as usize, &i.to_le_bytes())
            .unwrap();
    }
    c0.quiet(CtxId::DEFAULT).unwrap();
    for w in 0..64u64 {
        let last = (0..n).filter(|i| i % 64 == w).max().unwrap();
        // SAFETY: PE 1's own segment, read after PE 0's quiet.
        let v = unsafe {
            c1.local_segment()
                .add(8 * w as usize)
                .cast::<u64>()
                .read_volatile()
        };
        assert_eq!(v, last, "word {w}");
    }
    assert!(c0.board().bar0.read64(regs::CNT_COMMANDS) >= n);
}

#[test]
fn a_board_with_the_wrong_magic_is_refused_clearly() {
    let b = TestBoards::start("magic", 1, Fault::None);
    let dir = b.dirs[0].clone();
    let bar0 = bar::Bar::map(&dir.join("bar0")).unwrap();
    bar0.write32(regs::MAGIC, u32::from_le_bytes(*b"XYZW"));
    let e = Board::open(Device::Devsim(dir.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not an fshmem board") && e.contains("XYZW") && e.contains("FSHM"),
        "{e}"
    );
    bar0.write32(regs::MAGIC, cmd::MAGIC);
    bar0.write32(regs::VERSION, 2 << 16);
    let e = Board::open(Device::Devsim(dir)).unwrap_err().to_string();
    assert!(
        e.contains("version 2.0") && e.contains("major version 1"),
        "{e}"
    );
}

#[test]
fn the_health_check_names_the_failing_path() {
    for (fault, path) in [
        (Fault::GetData, HealthPath::WindowToGet),
        (Fault::InlinePut, HealthPath::InlinePutToWindow),
        (Fault::SegmentPut, HealthPath::SegmentPutToWindow),
        (Fault::Atomic, HealthPath::Atomic),
    ] {
        let b = TestBoards::start(&format!("fault{fault:?}"), 1, fault);
        let c = open(&b, 0, 1 << 20);
        let e = c.health_check().unwrap_err().to_string();
        assert!(e.contains(&path.to_string()), "{fault:?}: {e}");
    }
}

#[test]
fn gemm_compute_core_with_art_streams_results_to_a_peer() {
    use gasnet_core::compute::GEMM_RUN;
    spmd("gemm", 2, |c| {
        let (m, n, k) = (5usize, 7usize, 3usize);
        let bytes = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let a: Vec<f64> = (0..m * k).map(|i| i as f64).collect();
        let bm: Vec<f64> = (0..k * n).map(|i| (i % 5) as f64 - 2.0).collect();
        let done = Arc::new(AtomicU64::new(0));
        let d = done.clone();
        c.register_handler(
            64,
            Arc::new(move |_t, msg| d.store(1 + msg.args[1] as u64 * 2, Ordering::Release)),
        )
        .unwrap();
        if c.rank() == 1 {
            c.put(CtxId::DEFAULT, 1, 0, &bytes(&a)).unwrap();
            c.put(CtxId::DEFAULT, 1, 4096, &bytes(&bm)).unwrap();
            let args = [
                0, 4096, 8192, m as u32, n as u32, k as u32, 4, 0, 65536, 64, 7,
            ];
            c.am_request(1, Category::Short, GEMM_RUN, &args, &[], 0)
                .unwrap();
            while done.load(Ordering::Acquire) == 0 {
                c.poll().unwrap();
                std::thread::yield_now();
            }
            assert_eq!(done.load(Ordering::Acquire), 1, "tile status");
        }
        c.barrier().unwrap();
        if c.rank() == 0 {
            let mut got = vec![0u8; 8 * m * n];
            c.get(CtxId::DEFAULT, 0, 65536, &mut got).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k).map(|x| a[i * k + x] * bm[x * n + j]).sum();
                    let at = 8 * (i * n + j);
                    let v = f64::from_le_bytes(got[at..at + 8].try_into().unwrap());
                    assert_eq!(v, want, "C[{i}][{j}]");
                }
            }
        }
        c.barrier().unwrap();
    });
}

/// Polls `c` until a call fails (at most 20 s); returns the error.
fn poll_until_error(c: &FpgaConduit) -> ConduitError {
    let start = Instant::now();
    loop {
        if let Err(e) = c.poll() {
            return e;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "PE {} saw no error in 20 s",
            c.rank()
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_compute_request_the_core_cannot_run_is_reported_naming_sender_and_handler() {
    use gasnet_core::compute::{GEMM_RUN, Reject, Rejected};
    let good = [0, 4096, 8192, 2, 2, 2, 0, u32::MAX, 0, 64, 1];
    let mut system_reply = good;
    system_reply[9] = gasnet_core::handlers::ACK as u32;
    let cases: [(u8, &[u32], Reject); 3] = [
        (GEMM_RUN + 1, &[1, 2], Reject::NoSuchHandler),
        (GEMM_RUN, &[7], Reject::Arguments),
        (GEMM_RUN, &system_reply, Reject::ReplyHandler),
    ];
    for (i, (handler, args, reason)) in cases.into_iter().enumerate() {
        let b = TestBoards::start(&format!("reject{i}"), 2, Fault::None);
        let c1 = open(&b, 1, 1 << 20);
        let c0 = open(&b, 0, 1 << 20);
        c0.am_request(1, Category::Short, handler, args, &[], 0)
            .unwrap();
        let want = Rejected {
            src: 0,
            handler,
            nargs: args.len() as u8,
            reason,
        };
        match poll_until_error(&c1) {
            ConduitError::Am(AmError::ComputeRejected(r)) if r == want => {
                let line = ConduitError::Am(AmError::ComputeRejected(r)).to_string();
                assert!(
                    line.contains("request from PE 0")
                        && line.contains(&format!("handler {handler}"))
                        && line.contains("ERR_STATUS.COMPUTE"),
                    "{line}"
                );
            }
            other => panic!("case {i}: expected {want:?}, got {other:?}"),
        }
        // The sender's board saw nothing wrong.
        assert_eq!(
            c0.board().bar0.read32(regs::ERR_STATUS) & err::COMPUTE,
            0,
            "case {i}"
        );
    }
}

#[test]
fn compute_handler_indices_are_the_boards_unless_it_has_no_compute_core() {
    let noop = || -> HandlerFn { Arc::new(|_t, _m| {}) };
    let h224 = gasnet_core::handlers::FIRST_COMPUTE;
    // With a compute core: a host handler at 224..=255 is refused.
    let b = TestBoards::start_compute("idx-compute", 1, true);
    let c = open(&b, 0, 1 << 20);
    assert!(c.compute_cores());
    for i in [h224, 255] {
        match c.register_handler(i, noop()) {
            Err(ConduitError::Am(AmError::ComputeIndex(x))) if x == i => {}
            other => panic!("register_handler({i}): {other:?}"),
        }
    }
    c.register_handler(h224 - 1, noop()).unwrap();
    drop(c);
    drop(b);
    // Without one (CAPS.COMPUTE 0): 224 is a host handler like any other,
    // and a request to it reaches it.
    let b = TestBoards::start_compute("idx-plain", 1, false);
    let c = open(&b, 0, 1 << 20);
    assert!(!c.compute_cores());
    let got = Arc::new(AtomicU64::new(0));
    let g = got.clone();
    c.register_handler(
        h224,
        Arc::new(move |_t, m| g.store(1 + m.args[0] as u64, Ordering::Release)),
    )
    .unwrap();
    c.am_request(0, Category::Short, h224, &[41], &[], 0)
        .unwrap();
    let start = Instant::now();
    while got.load(Ordering::Acquire) == 0 {
        c.poll().unwrap();
        assert!(start.elapsed() < Duration::from_secs(20), "no delivery");
        std::thread::yield_now();
    }
    assert_eq!(got.load(Ordering::Acquire), 42);
    assert_eq!(c.board().bar0.read32(regs::ERR_STATUS), 0);
}

#[test]
fn a_message_to_an_unregistered_handler_fails_the_next_poll() {
    let b = TestBoards::start("unregistered", 1, Fault::None);
    let c = open(&b, 0, 1 << 20);
    c.am_request(0, Category::Short, 100, &[1], &[], 0).unwrap();
    match poll_until_error(&c) {
        ConduitError::Am(AmError::NoHandler(100)) => {}
        other => panic!("expected no handler at 100: {other:?}"),
    }
    // Reported once; the conduit goes on.
    c.poll().unwrap();
}

#[test]
fn lossy_duplicating_reordering_links_deliver_everything_exactly() {
    let impair = Impair {
        loss: 10.0,
        dup: 5.0,
        reorder: 20.0,
        cut: None,
    };
    let n = 3;
    let b = TestBoards::start_with(
        "lossy",
        n,
        Fault::None,
        Duration::from_secs(10),
        Some(impair),
    );
    let dirs = b.dirs.clone();
    let ts: Vec<_> = (0..n)
        .map(|r| {
            let dir = dirs[r].clone();
            std::thread::spawn(move || {
                let c = FpgaConduit::open(Device::Devsim(dir), r, n, 1 << 20).unwrap();
                c.health_check().unwrap();
                c.barrier().unwrap();
                let to = (r + 1) % n;
                // Small (inline), medium and fragmented (> one datagram)
                // puts, each a distinct pattern.
                let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + r as u32) as u8).collect();
                c.put(CtxId::DEFAULT, to, 0, &big).unwrap();
                c.put(CtxId::DEFAULT, to, 300_000, &[r as u8 + 1; 24])
                    .unwrap();
                for k in 0..200u64 {
                    c.atomic(CtxId::DEFAULT, to, 400_000, AmoOp::Add, AmoWidth::W64, k, 0)
                        .unwrap();
                }
                c.barrier().unwrap();
                let from = (r + n - 1) % n;
                let mut back = vec![0u8; 200_000];
                c.get(CtxId::DEFAULT, r, 0, &mut back).unwrap();
                let want: Vec<u8> = (0..200_000u32)
                    .map(|i| (i * 7 + from as u32) as u8)
                    .collect();
                assert!(back == want, "PE {r}: the fragmented put arrived damaged");
                let mut remote = vec![0u8; 200_000];
                c.get(CtxId::DEFAULT, to, 0, &mut remote).unwrap();
                assert!(remote == big, "PE {r}: the get across a lossy link differs");
                let sum = c
                    .atomic(
                        CtxId::DEFAULT,
                        r,
                        400_000,
                        AmoOp::Fetch,
                        AmoWidth::W64,
                        0,
                        0,
                    )
                    .unwrap();
                assert_eq!(sum, (0..200).sum::<u64>());
                let mut small = [0u8; 24];
                c.get(CtxId::DEFAULT, r, 300_000, &mut small).unwrap();
                assert_eq!(small, [from as u8 + 1; 24]);
                c.finalize().unwrap();
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
}

#[test]
fn a_board_that_stops_answering_is_reported_naming_its_pe() {
    let mut b = TestBoards::start_with("silent", 2, Fault::None, Duration::from_millis(300), None);
    let c0 = open(&b, 0, 1 << 20);
    let c1 = open(&b, 1, 1 << 20);
    c0.put(CtxId::DEFAULT, 1, 0, b"before").unwrap();
    c0.quiet(CtxId::DEFAULT).unwrap();
    drop(c1);
    b.stop_board(1);
    let start = Instant::now();
    let mut back = [0u8; 6];
    match c0.get(CtxId::DEFAULT, 1, 0, &mut back) {
        Err(ConduitError::PeerFailed { pe: 1, reason }) => {
            assert!(reason.contains("stopped answering"), "{reason}")
        }
        other => panic!("expected PE 1 to be reported: {other:?}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_contexts_quiet_returns_while_another_waits_for_a_slow_target() {
    let b = TestBoards::start("contexts", 3, Fault::None);
    let cs: Vec<FpgaConduit> = (0..3).map(|r| open(&b, r, 1 << 20)).collect();
    let c = &cs[0];
    let (slow, fast) = (c.ctx_create().unwrap(), c.ctx_create().unwrap());
    assert_ne!(slow, fast);
    // Board 1 stops serving: whatever PE 0 sends it stays unacknowledged.
    b.pause_board(1, true);
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect();
    c.put(slow, 1, 4096, &big).unwrap();
    c.put(slow, 1, 64, &[0x5a; 16]).unwrap();
    c.atomic(slow, 1, 128, AmoOp::Add, AmoWidth::W64, 5, 0)
        .unwrap();
    c.put(fast, 2, 4096, &big[..50_000]).unwrap();
    c.atomic(fast, 2, 128, AmoOp::Add, AmoWidth::W64, 9, 0)
        .unwrap();
    // The fast context's quiet returns with the slow one still waiting.
    c.quiet(fast).unwrap();
    assert_eq!(c.outstanding(fast).unwrap(), 0);
    let stuck = c.outstanding(slow).unwrap();
    assert!(
        stuck >= 3,
        "{stuck} commands of the slow context outstanding"
    );
    let mut back = vec![0u8; 50_000];
    // SAFETY: PE 2's segment in this process, quiesced by the quiet above.
    unsafe {
        std::ptr::copy_nonoverlapping(cs[2].local_segment().add(4096), back.as_mut_ptr(), 50_000)
    };
    assert!(
        back == big[..50_000],
        "the fast context's put is complete at its target"
    );
    assert_eq!(cs[2].load64(128), 9);
    // Board 1 serves again; the slow context completes, exactly.
    b.pause_board(1, false);
    c.quiet(slow).unwrap();
    assert_eq!(c.outstanding(slow).unwrap(), 0);
    let mut back = vec![0u8; 100_000];
    c.get(CtxId::DEFAULT, 1, 4096, &mut back).unwrap();
    assert!(back == big, "the slow context's put arrived whole");
    let mut small = [0u8; 16];
    c.get(CtxId::DEFAULT, 1, 64, &mut small).unwrap();
    assert_eq!(small, [0x5a; 16]);
    assert_eq!(cs[1].load64(128), 5);
    // Destroyed contexts are gone; the default one cannot be destroyed.
    c.ctx_destroy(slow).unwrap();
    assert!(matches!(c.quiet(slow), Err(ConduitError::NoContext { .. })));
    assert!(c.ctx_destroy(CtxId::DEFAULT).is_err());
    c.ctx_destroy(fast).unwrap();
}

#[test]
fn failure_records_travel_through_the_boards_and_name_the_first_failure() {
    let b = TestBoards::start("records", 3, Fault::None);
    let cs: Vec<FpgaConduit> = (0..3).map(|r| open(&b, r, 1 << 20)).collect();
    let word = |c: &FpgaConduit| c.load64(c.layout.state_word());
    // PE 2 left because it saw PE 1 fail; PE 1 recorded nothing (it failed
    // itself). PE 0, finding PE 2 gone, follows the records through the
    // boards to PE 1 and records PE 1 as its own cause.
    // SAFETY: an aligned word of PE 2's segment, nothing else writes it.
    unsafe { AtomicU64::from_ptr(cs[2].win(cs[2].layout.state_word()).cast()) }
        .store((1 + 1) << 32, Ordering::Release);
    let peers: Vec<PeerInfo> = (0..3)
        .map(|_| PeerInfo {
            pid: 0,
            checkable: false,
        })
        .collect();
    let e = cs[0].root_cause(&peers, 2);
    assert!(matches!(e, ConduitError::PeerFailed { pe: 1, .. }), "{e}");
    assert_eq!(word(&cs[0]) >> 32, 2, "PE 0 recorded PE 1 as its cause");
    assert_eq!(
        cs[1].peer_state(0).unwrap() >> 32,
        2,
        "PE 1 reads PE 0's record"
    );
    // A finalized PE says so in its word, which peers read over the links.
    assert_eq!(cs[0].peer_state(1).unwrap() & STATE_FINALIZED, 0);
    // SAFETY: as above, PE 1's own word.
    unsafe { AtomicU64::from_ptr(cs[1].win(cs[1].layout.state_word()).cast()) }
        .fetch_or(STATE_FINALIZED, Ordering::AcqRel);
    assert_eq!(cs[0].peer_state(1).unwrap() & STATE_FINALIZED, 1);
}

#[test]
fn a_board_whose_uptime_stands_still_is_reported() {
    let b = TestBoards::start("uptime", 2, Fault::None);
    let mut c = open(&b, 0, 1 << 20);
    c.board_timeout = Duration::from_millis(300);
    let _peer = open(&b, 1, 1 << 20);
    c.poll().unwrap();
    // The board's clock stops: whatever the host waits for, it learns that
    // its own board stopped, within the timeout (and not before).
    b.pause_board(0, true);
    let t = Instant::now();
    let mut buf = [0u8; 8];
    let e = c.get(CtxId::DEFAULT, 1, 0, &mut buf).unwrap_err();
    b.pause_board(0, false);
    assert!(matches!(e, ConduitError::PeerFailed { pe: 0, .. }), "{e}");
    assert!(e.to_string().contains("UPTIME did not advance"), "{e}");
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn a_failed_inline_put_is_reported_by_its_own_contexts_quiet() {
    let b = TestBoards::start("ctx-error", 2, Fault::None);
    let cs: Vec<FpgaConduit> = (0..2).map(|r| open(&b, r, 1 << 20)).collect();
    let c = &cs[0];
    let (bad, good) = (c.ctx_create().unwrap(), c.ctx_create().unwrap());
    let past = c.segment_len() as u64 * 64;
    // Inline puts and a non-fetching atomic: counted completions, no tag
    // entries; the one past PE 1's segment fails at its board.
    c.raw_put(bad, 1, past, [7u8; 8].as_ptr(), 8).unwrap();
    c.raw_put(good, 1, 256, [9u8; 8].as_ptr(), 8).unwrap();
    c.atomic(good, 1, 128, AmoOp::Add, AmoWidth::W64, 3, 0)
        .unwrap();
    c.quiet(good).unwrap();
    assert_eq!(cs[1].load64(128), 3);
    assert_eq!(cs[1].load64(256), u64::from_ne_bytes([9; 8]));
    let e = c.quiet(bad).expect_err("the put past the segment fails");
    assert!(
        matches!(e, ConduitError::PeerFailed { pe: 1, .. }),
        "the error names the target PE: {e}"
    );
    assert_eq!(c.outstanding(bad).unwrap(), 0);
    c.quiet(bad).unwrap();
    assert!(c.lock().waiting.is_empty(), "no tag entries are left");
}

/// `spec/conduit.md` §3: a put (inline and staged), put_nbi, non-fetching
/// atomic, put-with-signal and fence on a context other than the default
/// one return while another thread holds the host's lock on the board's
/// command queue (they wait in the context's queue); the thread that lets
/// go of the lock writes them to the board without anyone calling quiet,
/// and a blocking get on another context issued after them sees their data.
#[test]
fn a_contexts_puts_return_while_another_thread_holds_the_engine() {
    let b = TestBoards::start("ctx-held", 2, Fault::None);
    let cs: Vec<FpgaConduit> = (0..2).map(|r| open(&b, r, 1 << 20)).collect();
    let c = &cs[0];
    let ctx = c.ctx_create().unwrap();
    let big: Vec<u8> = (0..150_000u32).map(|i| (i * 11 + 5) as u8).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    let held = c.hold_engine();
    std::thread::scope(|s| {
        let big = &big;
        let issuer = s.spawn(move || {
            c.put(ctx, 1, 64, &[0xa5; 8]).unwrap();
            c.put(ctx, 1, 8192, big).unwrap();
            // SAFETY: `big` outlives the quiet below, unmodified.
            unsafe { c.put_nbi(ctx, 1, 4096, big.as_ptr(), 1000) }.unwrap();
            c.atomic(ctx, 1, 128, AmoOp::Add, AmoWidth::W64, 5, 0)
                .unwrap();
            c.put_signal(ctx, 1, 200_000, &[7; 3000], 136, SignalOp::Set, 1)
                .unwrap();
            c.fence(ctx).unwrap();
            tx.send(()).unwrap();
            // Waits for the lock; issued after the queued puts.
            let mut b = [0u8; 8];
            c.get(CtxId::DEFAULT, 1, 64, &mut b).unwrap();
            b
        });
        let returned = rx.recv_timeout(Duration::from_secs(20));
        let queued = c.queued.load(Ordering::SeqCst);
        let pending = c.ctxs[ctx.index()].outstanding();
        drop(held);
        assert!(
            returned.is_ok(),
            "the context's operations waited for the lock another thread held"
        );
        assert!(queued >= 6, "{queued} items queued while the lock was held");
        assert!(
            pending >= 6,
            "{pending} commands outstanding while the lock was held"
        );
        let b = issuer.join().unwrap();
        assert_eq!(b, [0xa5; 8], "a later get on another context saw the put");
    });
    assert_eq!(c.queued.load(Ordering::SeqCst), 0, "every item was written");
    // Written when the lock was let go: the signal lands with nobody
    // calling quiet (the board executes what is in its queue).
    let start = Instant::now();
    while cs[1].load64(136) != 1 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the context's queued put-with-signal never reached PE 1 after the lock was let go"
        );
        std::thread::yield_now();
    }
    c.quiet(ctx).unwrap();
    assert_eq!(c.outstanding(ctx).unwrap(), 0);
    let seg = |off: usize, len: usize| {
        let mut v = vec![0u8; len];
        // SAFETY: PE 1's segment in this process, quiesced by the quiet.
        unsafe {
            std::ptr::copy_nonoverlapping(cs[1].local_segment().add(off), v.as_mut_ptr(), len)
        };
        v
    };
    assert!(
        seg(8192, big.len()) == big,
        "the staged put arrived exactly"
    );
    assert_eq!(seg(4096, 1000), big[..1000]);
    assert_eq!(seg(64, 8), [0xa5; 8]);
    assert!(seg(200_000, 3000).iter().all(|&x| x == 7));
    assert_eq!((cs[1].load64(128), cs[1].load64(136)), (5, 1));
    c.ctx_destroy(ctx).unwrap();
    assert!(c.lock().waiting.is_empty(), "no tag entries are left");
}

/// Threads each on their own context (and one on the default context)
/// issue inline and staged puts and atomics at once, contending for the
/// host's lock. Once they have all returned, nothing is left in any queue
/// (no item waits for a later call: `host` module documentation), and
/// after each context's quiet every byte and count is exact.
#[test]
fn threads_on_their_own_contexts_leave_nothing_queued_and_land_exactly() {
    let b = TestBoards::start("ctx-threads", 2, Fault::None);
    let cs: Vec<FpgaConduit> = (0..2).map(|r| open(&b, r, 1 << 20)).collect();
    let c = &cs[0];
    const THREADS: usize = 4;
    const ROUNDS: usize = 300;
    let ctxs: Vec<CtxId> = (0..THREADS)
        .map(|t| {
            if t == 0 {
                CtxId::DEFAULT
            } else {
                c.ctx_create().unwrap()
            }
        })
        .collect();
    let value = |t: usize, i: usize| ((t as u64) << 32) | i as u64;
    let big =
        |t: usize, i: usize| -> Vec<u8> { (0..2000).map(|k| (k + 7 * i + t) as u8).collect() };
    std::thread::scope(|s| {
        for (t, &ctx) in ctxs.iter().enumerate() {
            s.spawn(move || {
                for i in 0..ROUNDS {
                    let at = 8 * (t * ROUNDS + i);
                    c.put(ctx, 1, at, &value(t, i).to_le_bytes()).unwrap();
                    c.atomic(ctx, 1, 65536 + 8 * t, AmoOp::Add, AmoWidth::W64, 1, 0)
                        .unwrap();
                    if i % 10 == 0 {
                        c.put(ctx, 1, 131072 + 4096 * t, &big(t, i)).unwrap();
                        c.fence(ctx).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(
        c.queued.load(Ordering::SeqCst),
        0,
        "items were left in the contexts' queues after every issuing thread returned"
    );
    for &ctx in &ctxs {
        c.quiet(ctx).unwrap();
        assert_eq!(c.outstanding(ctx).unwrap(), 0);
    }
    for t in 0..THREADS {
        for i in 0..ROUNDS {
            assert_eq!(cs[1].load64((8 * (t * ROUNDS + i)) as u64), value(t, i));
        }
        assert_eq!(cs[1].load64((65536 + 8 * t) as u64), ROUNDS as u64);
        let mut v = vec![0u8; 2000];
        // SAFETY: PE 1's segment in this process, quiesced by the quiets.
        unsafe {
            std::ptr::copy_nonoverlapping(
                cs[1].local_segment().add(131072 + 4096 * t),
                v.as_mut_ptr(),
                2000,
            )
        };
        assert!(v == big(t, ROUNDS - 10), "thread {t}'s last staged put won");
    }
    for &ctx in &ctxs[1..] {
        c.ctx_destroy(ctx).unwrap();
    }
}

/// The window the check after unlocking closes: an item queued after the
/// holder's last drain, while it still holds the lock (the queuing
/// thread's try_lock fails), is written by the holder once it lets go,
/// before its drop returns.
#[test]
fn an_item_queued_while_the_holder_lets_go_is_written_by_the_holder() {
    let b = TestBoards::start("ctx-window", 2, Fault::None);
    let cs: Vec<FpgaConduit> = (0..2).map(|r| open(&b, r, 1 << 20)).collect();
    let c = &cs[0];
    let ctx = c.ctx_create().unwrap();
    std::thread::scope(|s| {
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let issuer = s.spawn(move || {
            go_rx.recv_timeout(Duration::from_secs(20)).unwrap();
            c.put(ctx, 1, 64, &[0x3c; 8]).unwrap();
            done_tx.send(()).unwrap();
        });
        let held = c.hold_engine();
        crate::ctxq::BEFORE_UNLOCK.with_borrow_mut(|f| {
            *f = Some(Box::new(move || {
                go_tx.send(()).unwrap();
                done_rx
                    .recv_timeout(Duration::from_secs(20))
                    .expect("the put returned while the lock was held");
            }))
        });
        drop(held);
        assert_eq!(
            c.queued.load(Ordering::SeqCst),
            0,
            "the put queued in the holder's last moment was left in its queue"
        );
        issuer.join().unwrap();
    });
    c.quiet(ctx).unwrap();
    assert_eq!(cs[1].load64(64), u64::from_ne_bytes([0x3c; 8]));
    c.ctx_destroy(ctx).unwrap();
}
