//! Unit tests of the fpga conduit against in-process devsim boards.

use super::devsim::compute::GemmCore;
use super::devsim::link::UdpLink;
use super::devsim::{BoardModel, Fault};
use super::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Boards running on threads, each in its own temporary directory.
pub(crate) struct TestBoards {
    pub dirs: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl TestBoards {
    pub fn start(name: &str, n: usize, fault: Fault) -> TestBoards {
        let root = std::env::temp_dir().join(format!("fshmem-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut links: Vec<UdpLink> = (0..n).map(|i| UdpLink::bind(i as u16).unwrap()).collect();
        let ports: Vec<[u16; 2]> = links.iter().map(|l| l.local_ports().unwrap()).collect();
        let stop = Arc::new(AtomicBool::new(false));
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
                Box::new(GemmCore::new()),
                fault,
            )
            .unwrap();
            dirs.push(dir);
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || b.run(&stop)));
        }
        TestBoards {
            dirs,
            stop,
            threads,
        }
    }
}

impl Drop for TestBoards {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(root) = self.dirs.first().and_then(|d| d.parent()) {
            let _ = std::fs::remove_dir_all(root);
        }
    }
}

fn open(b: &TestBoards, rank: usize, seg: usize) -> FpgaConduit {
    FpgaConduit::open(Device::Devsim(b.dirs[rank].clone()), rank, b.dirs.len(), seg).unwrap()
}

#[test]
fn single_board_attach_and_health_check() {
    let b = TestBoards::start("single", 1, Fault::None);
    let c = open(&b, 0, 1 << 20);
    c.health_check().unwrap();
    c.put(0, 64, b"hello").unwrap();
    let mut back = [0u8; 5];
    c.get(0, 64, &mut back).unwrap();
    assert_eq!(&back, b"hello");
    let old = c.atomic(0, 128, AmoOp::FetchAdd, AmoWidth::W64, 7, 0).unwrap();
    assert_eq!(old, 0);
    assert_eq!(c.atomic(0, 128, AmoOp::Fetch, AmoWidth::W64, 0, 0).unwrap(), 7);
    c.quiet().unwrap();
}

/// Runs `body` as PE `rank` of `n` on threads, one conduit per board.
fn spmd(name: &str, n: usize, body: impl Fn(&FpgaConduit) + Send + Sync + 'static) {
    let b = TestBoards::start(name, n, Fault::None);
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
        c.put(peer, 4096, &data).unwrap();
        c.put(peer, 8, &[me as u8 + 1; 8]).unwrap();
        c.barrier().unwrap();
        let mut back = vec![0u8; 100_000];
        c.get(peer, 4096, &mut back).unwrap();
        let want: Vec<u8> = (0..100_000u32).map(|i| (i as u8) ^ me as u8).collect();
        assert_eq!(back, want);
        // SAFETY: reading this PE's own segment.
        let local = unsafe { *c.local_segment().add(8) };
        assert_eq!(local, peer as u8 + 1);
        let all = c.exchange(&[me as u8; 3]).unwrap();
        assert_eq!(all, vec![vec![0u8; 3], vec![1u8; 3]]);
        c.atomic(0, 256, AmoOp::Add, AmoWidth::W32, 1, 0).unwrap();
        c.barrier().unwrap();
        assert_eq!(c.atomic(0, 256, AmoOp::Fetch, AmoWidth::W32, 0, 0).unwrap(), 2);
    });
}
