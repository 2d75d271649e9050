//! The transport over a simulated network that loses, duplicates, delays
//! and reorders datagrams, driven by a seeded generator and a fake clock.

use super::*;
use crate::engine::{Command, Engine, GetInto, PutSource, Status};
use crate::{AmoOp, AmoWidth};

/// xorshift64*: deterministic, seeded, good enough for fault injection.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn chance(&mut self, percent: f64) -> bool {
        (self.next() % 1_000_000) as f64 / 10_000.0 < percent
    }
}

/// Faults applied to every datagram.
#[derive(Clone, Copy)]
struct Faults {
    loss: f64,
    dup: f64,
    /// Percent of datagrams held back by an extra delay (reordering).
    reorder: f64,
}

struct Net {
    rng: Rng,
    faults: Faults,
    /// (deliver at, destination, bytes)
    flight: Vec<(Instant, NodeId, Vec<u8>)>,
    base_delay: Duration,
}

impl Net {
    fn carry(&mut self, now: Instant, dst: NodeId, bytes: &[u8]) {
        if self.rng.chance(self.faults.loss) {
            return;
        }
        let copies = if self.rng.chance(self.faults.dup) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut at = now + self.base_delay;
            if self.rng.chance(self.faults.reorder) {
                at += Duration::from_micros(50 + self.rng.next() % 2000);
            }
            self.flight.push((at, dst, bytes.to_vec()));
        }
    }

    fn due(&mut self, now: Instant) -> Vec<(NodeId, Vec<u8>)> {
        let mut out = Vec::new();
        let mut k = 0;
        while k < self.flight.len() {
            if self.flight[k].0 <= now {
                let (_, d, b) = self.flight.swap_remove(k);
                out.push((d, b));
            } else {
                k += 1;
            }
        }
        out
    }
}

fn cfg() -> Config {
    Config {
        peer_timeout: Duration::from_secs(5),
        ..Config::default()
    }
}

/// Transports only: every node sends numbered AMs of assorted sizes to
/// every other; each receiver must get each exactly once, in order.
fn stream(n: usize, datagram: usize, faults: Faults, seed: u64, per_pair: usize) -> Stats {
    let t0 = Instant::now();
    let mut now = t0;
    let mut ts: Vec<Transport> = (0..n)
        .map(|i| Transport::new(i as NodeId, &vec![datagram; n], cfg(), now))
        .collect();
    let mut net = Net {
        rng: Rng(seed),
        faults,
        flight: Vec::new(),
        base_delay: Duration::from_micros(20),
    };
    let mut rng = Rng(seed ^ 0xabcdef);
    for k in 0..per_pair {
        for (s, t) in ts.iter_mut().enumerate() {
            for d in 0..n {
                if d == s {
                    continue;
                }
                let len = (rng.next() % 3000) as usize;
                let payload: Vec<u8> = (0..len).map(|i| (i + k + s) as u8).collect();
                let p = Packet::long(
                    Direction::Reply,
                    s as NodeId,
                    d as NodeId,
                    70,
                    &[k as u32, s as u32],
                    &payload,
                    k as u64 * 8,
                );
                t.send(p, now);
            }
        }
    }
    let mut got = vec![vec![0usize; n]; n];
    let step = Duration::from_micros(10);
    for _ in 0..2_000_000 {
        for t in ts.iter_mut() {
            let mut outs = Vec::new();
            t.transmit(now, &mut |d, b| outs.push((d, b.to_vec())));
            t.check(now)
                .expect("no peer fails on a lossy but live network");
            for (d, b) in outs {
                net.carry(now, d, &b);
            }
        }
        for (d, b) in net.due(now) {
            ts[d as usize].receive(&b, now);
        }
        for (d, t) in ts.iter_mut().enumerate() {
            while let Some(p) = t.delivered() {
                let s = p.src as usize;
                let k = got[d][s];
                assert_eq!(p.args, vec![k as u32, s as u32], "order {s}->{d}");
                assert_eq!(p.offset, k as u64 * 8);
                assert_eq!(p.total_len as usize, p.payload.len());
                assert!(
                    p.payload
                        .iter()
                        .enumerate()
                        .all(|(i, &b)| b == (i + k + s) as u8)
                );
                got[d][s] += 1;
            }
        }
        let done = (0..n).all(|d| (0..n).all(|s| s == d || got[d][s] == per_pair));
        if done && ts.iter().all(|t| !t.has_unacked()) {
            return ts.iter().fold(Stats::default(), |a, t| {
                let s = t.stats();
                Stats {
                    retransmitted: a.retransmitted + s.retransmitted,
                    duplicates: a.duplicates + s.duplicates,
                    out_of_order: a.out_of_order + s.out_of_order,
                    nacks_sent: a.nacks_sent + s.nacks_sent,
                    timeouts: a.timeouts + s.timeouts,
                    ..a
                }
            });
        }
        now += step;
    }
    panic!("stream did not finish: {got:?}");
}

#[test]
fn clean_network_delivers_in_order_without_retransmission() {
    let none = Faults {
        loss: 0.0,
        dup: 0.0,
        reorder: 0.0,
    };
    let s = stream(3, 1232, none, 1, 200);
    assert_eq!(s.retransmitted, 0);
    assert_eq!(s.duplicates, 0);
}

#[test]
fn lossy_network_delivers_everything_once_in_order() {
    let bad = Faults {
        loss: 5.0,
        dup: 1.0,
        reorder: 10.0,
    };
    for seed in [7, 8, 9] {
        let s = stream(3, 1232, bad, seed, 150);
        assert!(s.retransmitted > 0 && s.duplicates > 0 && s.out_of_order > 0);
        assert!(s.nacks_sent > 0);
    }
}

#[test]
fn very_lossy_network_with_tiny_datagrams() {
    let worse = Faults {
        loss: 20.0,
        dup: 5.0,
        reorder: 20.0,
    };
    stream(2, 200, worse, 42, 60);
}

#[test]
fn silent_peer_is_reported_after_the_timeout() {
    let mut now = Instant::now();
    let c = Config {
        peer_timeout: Duration::from_millis(300),
        ..Config::default()
    };
    let mut t = Transport::new(0, &[1500, 1500], c, now);
    t.send(Packet::short(Direction::Request, 0, 1, 70, &[1]), now);
    let mut sent = 0;
    let err = loop {
        t.transmit(now, &mut |_, _| sent += 1);
        if let Err(e) = t.check(now) {
            break e;
        }
        now += Duration::from_millis(1);
    };
    assert_eq!(err.peer, 1);
    assert!(err.reason.contains("unacknowledged"), "{}", err.reason);
    assert!(sent >= 3, "retransmitted with backoff: {sent}");
}

#[test]
fn awaited_response_triggers_probe_then_failure() {
    let mut now = Instant::now();
    let c = Config {
        peer_timeout: Duration::from_millis(400),
        keepalive: Duration::from_millis(50),
        ..Config::default()
    };
    let mut a = Transport::new(0, &[1500, 1500], c, now);
    let mut b = Transport::new(1, &[1500, 1500], c, now);
    a.send(Packet::short(Direction::Request, 0, 1, 70, &[1]), now);
    // b receives and acknowledges, then goes silent without answering.
    let mut to_b = Vec::new();
    a.transmit(now, &mut |_, d| to_b.push(d.to_vec()));
    for d in &to_b {
        b.receive(d, now);
    }
    assert!(b.delivered().is_some());
    now += Duration::from_millis(1);
    let mut to_a = Vec::new();
    b.transmit(now, &mut |_, d| to_a.push(d.to_vec()));
    for d in &to_a {
        a.receive(d, now);
    }
    assert!(!a.has_unacked());
    let mut probes = 0;
    let err = loop {
        now += Duration::from_millis(5);
        if let Err(e) = a.check(now) {
            break e;
        }
        a.transmit(now, &mut |_, d| {
            if wire::decode(d).is_ok_and(|p| p.handler == PROBE_HANDLER) {
                probes += 1;
            }
        });
    };
    assert_eq!(err.peer, 1);
    assert!(probes >= 1);
    assert!(
        err.reason.contains("1 requests unanswered"),
        "{}",
        err.reason
    );
}

#[test]
fn garbage_and_misaddressed_datagrams_are_rejected() {
    let now = Instant::now();
    let mut t = Transport::new(0, &[1500, 1500], cfg(), now);
    t.receive(&[1, 2, 3], now);
    let p = Packet::short(Direction::Request, 1, 5, 70, &[]).with_seq(0);
    t.receive(&wire::encode(&p).unwrap(), now);
    let p = Packet::short(Direction::Request, 1, 0, 70, &[]);
    t.receive(&wire::encode(&p).unwrap(), now);
    assert_eq!(t.stats().rejected, 3);
    assert!(t.delivered().is_none());
}

#[test]
fn sequence_numbers_wrap() {
    let mut now = Instant::now();
    let mut a = Transport::new(0, &[1500, 1500], cfg(), now);
    let mut b = Transport::new(1, &[1500, 1500], cfg(), now);
    a.peers[1].next_seq = u32::MAX - 3;
    b.peers[0].expected = u32::MAX - 3;
    for k in 0..10u32 {
        a.send(Packet::short(Direction::Reply, 0, 1, 70, &[k]), now);
    }
    for _ in 0..10 {
        let mut ab = Vec::new();
        a.transmit(now, &mut |_, d| ab.push(d.to_vec()));
        for d in ab.iter().rev() {
            b.receive(d, now);
        }
        let mut ba = Vec::new();
        b.transmit(now, &mut |_, d| ba.push(d.to_vec()));
        for d in &ba {
            a.receive(d, now);
        }
        now += Duration::from_millis(1);
    }
    let got: Vec<u32> = std::iter::from_fn(|| b.delivered())
        .map(|p| p.args[0])
        .collect();
    assert_eq!(got, (0..10).collect::<Vec<_>>());
    assert!(!a.has_unacked());
}

/// Engines over the transports: puts, gets and atomics under loss,
/// duplication and reordering give exact results, nothing applied twice.
#[test]
fn engines_over_a_lossy_network_are_exact() {
    const SEG: usize = 1 << 16;
    let n = 3;
    let t0 = Instant::now();
    let mut now = t0;
    let mut engines: Vec<_> = (0..n)
        .map(|i| Engine::new(i as NodeId, n, vec![0u8; SEG]))
        .collect();
    let mut ts: Vec<Transport> = (0..n)
        .map(|i| Transport::new(i as NodeId, &vec![1232; n], cfg(), now))
        .collect();
    let mut net = Net {
        rng: Rng(99),
        faults: Faults {
            loss: 5.0,
            dup: 1.0,
            reorder: 10.0,
        },
        flight: Vec::new(),
        base_delay: Duration::from_micros(30),
    };
    const ADDS: u64 = 200;
    for (i, e) in engines.iter_mut().enumerate() {
        for k in 0..ADDS {
            let amo = Command::Amo {
                dst: 0,
                op: AmoOp::FetchAdd,
                width: AmoWidth::W64,
                offset: 0,
                operand: 1,
                compare: 0,
            };
            e.submit(k, amo).unwrap();
        }
        let big: Vec<u8> = (0..20_000).map(|x| (x * 7 + i) as u8).collect();
        let put = Command::Put {
            dst: ((i + 1) % n) as NodeId,
            offset: 4096 + 20_000 * i as u64,
            source: PutSource::Bytes(big),
        };
        e.submit(1000, put).unwrap();
        let get = Command::Get {
            dst: ((i + 1) % n) as NodeId,
            offset: 4096 + 20_000 * i as u64,
            len: 20_000,
            into: GetInto::Buffer,
        };
        e.submit(2000, get).unwrap();
    }
    let mut olds = vec![Vec::new(); n];
    let mut got = vec![None; n];
    for _ in 0..5_000_000 {
        for i in 0..n {
            while let Some(p) = engines[i].next_outgoing() {
                ts[i].send(p, now);
            }
            let mut outs = Vec::new();
            ts[i].transmit(now, &mut |d, b| outs.push((d, b.to_vec())));
            ts[i].check(now).expect("live");
            for (d, b) in outs {
                net.carry(now, d, &b);
            }
            while let Some(c) = engines[i].poll_completion() {
                assert_eq!(c.status, Status::Ok);
                match c.tag {
                    1000 => {}
                    2000 => got[i] = Some(c.data),
                    _ => olds[i].push(c.value),
                }
            }
        }
        for (d, b) in net.due(now) {
            ts[d as usize].receive(&b, now);
        }
        for i in 0..n {
            while let Some(p) = ts[i].delivered() {
                engines[i].receive(p);
            }
        }
        if engines.iter().all(|e| e.outstanding() == 0) {
            break;
        }
        now += Duration::from_micros(10);
    }
    assert!(engines.iter().all(|e| e.outstanding() == 0), "finished");
    for (i, e) in engines.iter_mut().enumerate() {
        while let Some(c) = e.poll_completion() {
            assert_eq!(c.status, Status::Ok);
            match c.tag {
                1000 => {}
                2000 => got[i] = Some(c.data),
                _ => olds[i].push(c.value),
            }
        }
    }
    let word: [u8; 8] = engines[0].memory()[..8].try_into().unwrap();
    assert_eq!(
        u64::from_le_bytes(word),
        ADDS * n as u64,
        "no add lost or doubled"
    );
    let mut all: Vec<u64> = olds.concat();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..ADDS * n as u64).collect::<Vec<_>>(),
        "old values unique"
    );
    for (i, g) in got.iter().enumerate() {
        let want: Vec<u8> = (0..20_000).map(|x| (x * 7 + i) as u8).collect();
        assert_eq!(g.as_deref(), Some(&want[..]), "get after put on PE {i}");
    }
}

/// A requester `a` and a responder `b` over a network losing 20 %,
/// duplicating 5 % and reordering 30 % of the datagrams; `b` answers every
/// request, but its progress engine stops for `pause` out of every 3 s
/// (a process not scheduled). Runs `secs` simulated seconds in 1 ms steps
/// with a peer timeout of 1 s; returns the failure `a` reported, if any,
/// and the number of responses `a` got.
fn requester_and_paused_responder(
    pause: Duration,
    secs: u64,
    seed: u64,
) -> (Option<PeerSilent>, u64) {
    let t0 = Instant::now();
    let mut now = t0;
    let c = Config {
        peer_timeout: Duration::from_secs(1),
        ..Config::default()
    };
    let mut a = Transport::new(0, &[1500, 1500], c, now);
    let mut b = Transport::new(1, &[1500, 1500], c, now);
    let mut net = Net {
        rng: Rng(seed),
        faults: Faults {
            loss: 20.0,
            dup: 5.0,
            reorder: 30.0,
        },
        flight: Vec::new(),
        base_delay: Duration::from_micros(30),
    };
    let (mut asked, mut answered) = (0u64, 0u64);
    let period = Duration::from_secs(3);
    for _ in 0..secs * 1000 {
        let b_runs = (now - t0).as_nanos() % period.as_nanos() >= pause.as_nanos();
        // a asks whenever its previous request was answered.
        if asked == answered {
            a.send(
                Packet::short(Direction::Request, 0, 1, 70, &[asked as u32]),
                now,
            );
            asked += 1;
        }
        let mut out = Vec::new();
        a.transmit(now, &mut |d, bytes| out.push((d, bytes.to_vec())));
        if let Err(e) = a.check(now) {
            return (Some(e), answered);
        }
        if b_runs {
            b.transmit(now, &mut |d, bytes| out.push((d, bytes.to_vec())));
            b.check(now).expect("b needs nothing from a for long");
        }
        for (d, bytes) in out {
            net.carry(now, d, &bytes);
        }
        // Datagrams to a paused b wait in its socket buffer.
        let mut held = Vec::new();
        for (d, bytes) in net.due(now) {
            match d {
                0 => a.receive(&bytes, now),
                _ if b_runs => b.receive(&bytes, now),
                _ => held.push((now, d, bytes)),
            }
        }
        net.flight.extend(held);
        while let Some(p) = a.delivered() {
            assert_eq!(p.args, vec![answered as u32], "responses in order");
            answered += 1;
        }
        if b_runs {
            while let Some(p) = b.delivered() {
                b.send(Packet::short(Direction::Reply, 1, 0, 71, &p.args), now);
            }
        }
        now += Duration::from_millis(1);
    }
    (None, answered)
}

#[test]
fn a_live_peer_on_a_lossy_link_is_never_blamed() {
    for seed in 1..=4 {
        // Unscheduled for 60 % of the peer timeout every 3 s, 120 s long.
        let (failed, answered) =
            requester_and_paused_responder(Duration::from_millis(600), 120, seed);
        assert!(failed.is_none(), "seed {seed}: {failed:?}");
        assert!(answered > 1000, "seed {seed}: only {answered} responses");
    }
}

#[test]
fn a_peer_silent_past_the_timeout_is_declared_within_it_after_8_probes() {
    // Unscheduled for 1.5 s every 3 s: it must be declared failed, at the
    // timeout (1 s) of its first silence, after at least 8 probes.
    let (failed, _) = requester_and_paused_responder(Duration::from_millis(1500), 10, 7);
    let e = failed.expect("a peer silent for 1.5 s is declared failed");
    assert_eq!(e.peer, 1);
    assert!(e.reason.contains("probes unanswered"), "{}", e.reason);

    // Silent from the start, with only an awaited response (nothing
    // unacknowledged): probes are sequenced probe packets asking for an
    // immediate ACK, sent at the probe interval whatever the backoff.
    let mut now = Instant::now();
    let t0 = now;
    let c = Config {
        peer_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    let mut a = Transport::new(0, &[1500, 1500], c, now);
    let mut b = Transport::new(1, &[1500, 1500], c, now);
    a.send(Packet::short(Direction::Request, 0, 1, 70, &[1]), now);
    let mut to_b = Vec::new();
    a.transmit(now, &mut |_, d| to_b.push(d.to_vec()));
    for d in &to_b {
        b.receive(d, now);
    }
    assert!(b.delivered().is_some());
    now += Duration::from_millis(1);
    let mut to_a = Vec::new();
    b.transmit(now, &mut |_, d| to_a.push(d.to_vec()));
    for d in &to_a {
        a.receive(d, now);
    }
    assert!(!a.has_unacked());
    let heard = now;
    let (mut probes, mut sends) = (Vec::new(), 0);
    let err = loop {
        now += Duration::from_millis(5);
        if let Err(e) = a.check(now) {
            break e;
        }
        a.transmit(now, &mut |_, d| {
            sends += 1;
            let p = wire::decode(d).expect("decodes");
            assert!(
                p.flags & FLAG_ACK_NOW != 0,
                "every probe asks for an ACK now"
            );
            if p.handler == PROBE_HANDLER {
                probes.push(now);
            }
        });
        assert!(now - t0 < Duration::from_secs(5), "never declared");
    };
    let at = now - heard;
    assert_eq!(err.peer, 1);
    assert!(
        at >= c.peer_timeout && at <= c.peer_timeout + Duration::from_millis(50),
        "declared after {at:?}"
    );
    assert!(sends >= MIN_PROBES as usize, "{sends} probes sent");
    assert!(!probes.is_empty());
}

/// Three nodes that each send a request to every other one and answer
/// what they receive; at 500 ms node 1 is cut off (no datagram to or from
/// it arrives). With a 1 s peer timeout, nodes 0 and 2 (which still hear
/// each other through their cross-probes) name node 1, and node 1, which
/// hears nobody, names itself as cut off; all within the timeout and its
/// probing after the cut. Without the cut nobody reports anything.
#[test]
fn the_cut_off_node_names_itself_and_the_others_name_it() {
    for cut in [true, false] {
        let t0 = Instant::now();
        let mut now = t0;
        let c = Config {
            peer_timeout: Duration::from_secs(1),
            ..Config::default()
        };
        let mut nodes: Vec<Transport> = (0..3)
            .map(|i| Transport::new(i, &[1500; 3], c, now))
            .collect();
        let mut failed: Vec<Option<(PeerSilent, Duration)>> = vec![None, None, None];
        let cut_at = t0 + Duration::from_millis(500);
        let mut round = 0u32;
        while now - t0 < Duration::from_secs(4) {
            // Every 50 ms, each node asks every other one something.
            if round.is_multiple_of(50) {
                for (i, t) in nodes.iter_mut().enumerate() {
                    for j in (0..3).filter(|&j| j != i) {
                        t.send(
                            Packet::short(Direction::Request, i as u16, j as u16, 70, &[round]),
                            now,
                        );
                    }
                }
            }
            let mut out = Vec::new();
            for (i, t) in nodes.iter_mut().enumerate() {
                t.transmit(now, &mut |d, b| out.push((i, d as usize, b.to_vec())));
                if let Err(e) = t.check(now)
                    && failed[i].is_none()
                {
                    failed[i] = Some((e, now - cut_at));
                }
            }
            for (from, to, bytes) in out {
                if cut && now >= cut_at && (from == 1 || to == 1) {
                    continue;
                }
                nodes[to].receive(&bytes, now);
            }
            for (i, t) in nodes.iter_mut().enumerate() {
                while let Some(p) = t.delivered() {
                    if p.ptype
                        == (PacketType::Am {
                            category: Category::Short,
                            direction: Direction::Request,
                        })
                    {
                        t.send(
                            Packet::short(Direction::Reply, i as u16, p.src, 71, &p.args),
                            now,
                        );
                    }
                }
            }
            now += Duration::from_millis(1);
            round += 1;
        }
        if !cut {
            assert_eq!(
                failed,
                vec![None, None, None],
                "nothing is reported without a cut"
            );
            continue;
        }
        for (i, f) in failed.iter().enumerate() {
            let (e, after) = f
                .as_ref()
                .unwrap_or_else(|| panic!("node {i} reported nothing"));
            assert_eq!(e.peer, 1, "node {i}: {e:?}");
            assert!(
                after <= &Duration::from_millis(1300),
                "node {i} after {after:?}"
            );
            if i == 1 {
                assert!(e.reason.starts_with("cut off"), "{}", e.reason);
            }
        }
    }
}

#[test]
fn a_gathered_datagram_is_the_whole_one_in_parts() {
    let now = Instant::now();
    let mut whole = Transport::new(0, &[65_000, 65_000], cfg(), now);
    let mut parts = Transport::new(0, &[65_000, 65_000], cfg(), now);
    // A large payload (in parts), an odd-sized one (padded) and a small
    // one (whole in both).
    for len in [60_000usize, GATHER_MIN + 3, 100] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
        let p = Packet::long(
            Direction::Request,
            0,
            1,
            crate::handlers::PUT,
            &[1, 2, 3],
            &payload,
            4096,
        );
        whole.send(p.clone(), now);
        parts.send(p, now);
    }
    let mut a: Vec<Vec<u8>> = Vec::new();
    whole.transmit(now, &mut |_, b| a.push(b.to_vec()));
    let mut b: Vec<(usize, Vec<u8>)> = Vec::new();
    parts.transmit_gather(now, &mut |_, ps| b.push((ps.len(), ps.concat())));
    assert_eq!(a.len(), 3);
    assert_eq!(
        b.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [3, 3, 1],
        "large payloads come in three parts, small ones whole"
    );
    for (i, (x, (_, y))) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "datagram {i} differs when gathered");
        assert!(wire::decode(y).is_ok(), "datagram {i} does not decode");
    }
}
