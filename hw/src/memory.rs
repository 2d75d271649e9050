//! Board memory for the core's AXI4 master port: a [`Dram`] (bytes by
//! address) served through [`AxiMemory`], a slave that answers reads and
//! acknowledges writes a configurable number of cycles after the request,
//! optionally withholding its ready signals at random to exercise the
//! core's flow control.

use crate::signals::{BEAT, Inputs, Outputs};
use std::collections::VecDeque;

/// Bytes addressed from 0: what the memory port reaches (a board's DDR, the
/// BAR2 window). Accesses outside [`Dram::len`] fail (the port answers with
/// an error response); they never panic.
pub trait Dram {
    /// Bytes of memory.
    fn len(&self) -> u64;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `buf.len()` bytes at `addr`; false if out of range.
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool;
    /// Writes the bytes of `data` (at most one beat, [`BEAT`] bytes) whose
    /// bit in `strobe` is set (bit `i` for `data[i]`) at `addr`; false if out
    /// of range or longer than a beat.
    fn write(&mut self, addr: u64, data: &[u8], strobe: u32) -> bool;
}

fn in_range(len: u64, addr: u64, n: usize) -> Option<usize> {
    let end = addr.checked_add(n as u64)?;
    (end <= len).then_some(addr as usize)
}

impl Dram for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }

    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        match in_range(Dram::len(self), addr, buf.len()) {
            Some(a) => {
                buf.copy_from_slice(&self[a..a + buf.len()]);
                true
            }
            None => false,
        }
    }

    fn write(&mut self, addr: u64, data: &[u8], strobe: u32) -> bool {
        if data.len() > BEAT {
            return false;
        }
        match in_range(Dram::len(self), addr, data.len()) {
            Some(a) => {
                for (i, &b) in data.iter().enumerate() {
                    if strobe >> i & 1 == 1 {
                        self[a + i] = b;
                    }
                }
                true
            }
            None => false,
        }
    }
}

#[derive(Debug)]
struct ReadBurst {
    addr: u64,
    beats: u32,
    id: u8,
    due: u64,
}

#[derive(Debug)]
struct WriteBurst {
    addr: u64,
    id: u8,
    ok: bool,
}

/// Counters of an [`AxiMemory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemStats {
    /// Read bursts accepted.
    pub read_bursts: u64,
    /// Read beats returned.
    pub read_beats: u64,
    /// Write bursts accepted.
    pub write_bursts: u64,
    /// Write beats accepted.
    pub write_beats: u64,
    /// Accesses outside the memory (answered with SLVERR).
    pub errors: u64,
}

/// An AXI4 slave over a [`Dram`]: read data starts `read_latency` cycles
/// after the read address is accepted (then one beat per cycle), a write
/// response comes `write_latency` cycles after the last write beat. Writes
/// reach the [`Dram`] when their beat is accepted, in order.
#[derive(Debug)]
pub struct AxiMemory {
    latency: u64,
    write_latency: u64,
    stall_percent: u32,
    rng: u64,
    cycle: u64,
    reads: VecDeque<ReadBurst>,
    writes: VecDeque<WriteBurst>,
    wbeat: u64,
    resp: VecDeque<(u64, u8, bool)>,
    stats: MemStats,
}

impl AxiMemory {
    /// A memory answering reads after `read_latency` cycles and writes
    /// after `write_latency` (each at least 1).
    pub fn new(read_latency: u32, write_latency: u32) -> AxiMemory {
        AxiMemory {
            latency: read_latency.max(1) as u64,
            write_latency: write_latency.max(1) as u64,
            stall_percent: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            cycle: 0,
            reads: VecDeque::new(),
            writes: VecDeque::new(),
            wbeat: 0,
            resp: VecDeque::new(),
            stats: MemStats::default(),
        }
    }

    /// Withholds each ready and valid signal in `percent` of cycles (a
    /// seeded sequence, so runs repeat).
    pub fn with_stalls(mut self, percent: u32, seed: u64) -> AxiMemory {
        self.stall_percent = percent.min(90);
        self.rng = seed | 1;
        self
    }

    /// The counters.
    pub fn stats(&self) -> MemStats {
        self.stats
    }

    /// Whether no transaction is in progress.
    pub fn is_idle(&self) -> bool {
        self.reads.is_empty() && self.writes.is_empty() && self.resp.is_empty()
    }

    fn stall(&mut self) -> bool {
        if self.stall_percent == 0 {
            return false;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 100) < self.stall_percent as u64
    }

    /// Sets this cycle's AXI inputs of the core.
    pub fn drive(&mut self, dram: &dyn Dram, inp: &mut Inputs) {
        inp.arready = u8::from(!self.stall());
        inp.awready = u8::from(!self.stall());
        inp.wready = u8::from(!self.writes.is_empty() && !self.stall());
        inp.rvalid = 0;
        inp.rlast = 0;
        inp.rresp = 0;
        inp.rid = 0;
        let due = self.reads.front().is_some_and(|r| r.due <= self.cycle);
        if due
            && !self.stall()
            && let Some(r) = self.reads.front()
        {
            inp.rvalid = 1;
            inp.rlast = u8::from(r.beats == 1);
            inp.rid = r.id;
            let mut beat = [0u8; BEAT];
            let ok = dram.read(r.addr, &mut beat);
            inp.rresp = if ok { 0 } else { 2 };
            inp.rdata = if ok { beat } else { [0; BEAT] };
        }
        inp.bvalid = 0;
        inp.bresp = 0;
        inp.bid = 0;
        let due = self.resp.front().is_some_and(|&(d, _, _)| d <= self.cycle);
        if due
            && !self.stall()
            && let Some(&(_, id, ok)) = self.resp.front()
        {
            inp.bvalid = 1;
            inp.bid = id;
            inp.bresp = if ok { 0 } else { 2 };
        }
    }

    /// Completes the handshakes of the cycle just clocked (`inp` as driven,
    /// `out` as sampled).
    pub fn observe(&mut self, dram: &mut dyn Dram, inp: &Inputs, out: &Outputs) {
        if inp.rvalid == 1 && out.rready == 1 {
            self.stats.read_beats += 1;
            if inp.rresp != 0 {
                self.stats.errors += 1;
            }
            if let Some(r) = self.reads.front_mut() {
                r.addr += BEAT as u64;
                r.beats -= 1;
                if r.beats == 0 {
                    self.reads.pop_front();
                }
            }
        }
        if inp.bvalid == 1 && out.bready == 1 {
            self.resp.pop_front();
        }
        if inp.wready == 1 && out.wvalid == 1 {
            self.stats.write_beats += 1;
            if let Some(w) = self.writes.front_mut() {
                let addr = w.addr + self.wbeat * BEAT as u64;
                if !dram.write(addr, &out.wdata, out.wstrb) {
                    w.ok = false;
                }
                self.wbeat += 1;
                if out.wlast == 1 {
                    let w = self.writes.pop_front().expect("write burst");
                    if !w.ok {
                        self.stats.errors += 1;
                    }
                    self.resp
                        .push_back((self.cycle + self.write_latency, w.id, w.ok));
                    self.wbeat = 0;
                }
            }
        }
        if inp.arready == 1 && out.arvalid == 1 {
            self.stats.read_bursts += 1;
            self.reads.push_back(ReadBurst {
                addr: out.araddr,
                beats: out.arlen as u32 + 1,
                id: out.arid,
                due: self.cycle + self.latency,
            });
        }
        if inp.awready == 1 && out.awvalid == 1 {
            self.stats.write_bursts += 1;
            self.writes.push_back(WriteBurst {
                addr: out.awaddr,
                id: out.awid,
                ok: true,
            });
        }
        self.cycle += 1;
    }

    /// Drops every transaction in progress (the core was reset).
    pub fn reset(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.resp.clear();
        self.wbeat = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec_dram_checks_range_and_strobes() {
        let mut m = vec![0u8; 64];
        assert!(m.write(30, &[1, 2, 3, 4], 0b1011));
        assert_eq!(&m[30..34], &[1, 2, 0, 4]);
        let mut b = [0u8; 4];
        assert!(m.read(30, &mut b));
        assert_eq!(b, [1, 2, 0, 4]);
        assert!(!m.read(62, &mut b));
        assert!(!m.write(u64::MAX - 1, &[1, 2], 3));
        assert!(!m.write(0, &[0; 33], u32::MAX));
    }

    #[test]
    fn reads_arrive_after_the_latency_one_beat_a_cycle() {
        let mut dram: Vec<u8> = (0..=255u8).collect();
        let mut m = AxiMemory::new(3, 3);
        let mut inp = Inputs::default();
        let mut out = Outputs {
            arvalid: 1,
            araddr: 32,
            arlen: 1,
            rready: 1,
            ..Outputs::default()
        };
        let mut got = Vec::new();
        for cycle in 0..8 {
            m.drive(&dram, &mut inp);
            if inp.rvalid == 1 {
                got.push((cycle, inp.rdata[0], inp.rlast));
            }
            m.observe(&mut dram, &inp, &out);
            out.arvalid = 0;
        }
        assert_eq!(got, vec![(3, 32, 0), (4, 64, 1)]);
    }
}
