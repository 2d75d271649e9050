//! A one-node Slurm cluster for tests: munged, slurmctld and slurmd from
//! Debian's packages (munge, slurmctld, slurmd, slurm-client), configured in
//! a temporary directory, started by [`Slurm::start`] and stopped (every
//! daemon killed and the directory removed) when the value is dropped.
//!
//! The daemons run in the foreground as children of the test, on
//! loopback ports chosen free at start, with their own munge socket and key,
//! so they neither need nor touch a system Slurm or munge.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running one-node cluster; `srun` through [`Slurm::srun`].
#[derive(Debug)]
pub struct Slurm {
    dir: PathBuf,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

/// How long the daemons may take to bring the node up.
const START_TIMEOUT: Duration = Duration::from_secs(60);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

fn need(path: &str) -> &str {
    assert!(
        Path::new(path).exists(),
        "{path} is missing: the Slurm tests need Debian's munge, slurmctld, slurmd and \
         slurm-client (scripts/test.sh installs them)"
    );
    path
}

impl Slurm {
    /// Configures and starts munged, slurmctld and slurmd (node `fsnode`,
    /// 8 CPUs so that jobs of up to 8 tasks fit on any machine), and waits
    /// until `sinfo` reports the node idle. Panics, after stopping what it
    /// started, if the node does not come up within a minute.
    pub fn start(tag: &str) -> Slurm {
        let dir = std::env::temp_dir().join(format!("fshmem-slurm-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for d in ["munge", "state", "spool", "tmp"] {
            std::fs::create_dir_all(dir.join(d)).expect("create the Slurm directories");
        }
        use std::os::unix::fs::PermissionsExt;
        for d in [dir.as_path(), &dir.join("munge")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700))
                .expect("chmod the Slurm directories");
        }
        let mut s = Slurm {
            conf: dir.join("slurm.conf"),
            dir,
            daemons: Vec::new(),
        };
        let d = s.dir.display().to_string();
        let key = format!("{d}/munge/munge.key");
        let ok = Command::new(need("/usr/sbin/mungekey"))
            .args(["--create", "--keyfile", &key])
            .status()
            .expect("run mungekey");
        assert!(ok.success(), "mungekey --create failed");
        let sock = format!("{d}/munge/socket");
        s.daemon(
            "munged",
            Command::new(need("/usr/sbin/munged")).args([
                "--foreground",
                "--force",
                &format!("--socket={sock}"),
                &format!("--key-file={key}"),
                &format!("--log-file={d}/munge/log"),
                &format!("--pid-file={d}/munge/pid"),
                &format!("--seed-file={d}/munge/seed"),
            ]),
        );
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        // TmpFS in the cluster's directory: the PMIx plugin makes a
        // directory per step under it, named by job id, and job ids start
        // at 1 in every new cluster, so one that an earlier cluster left
        // in /tmp fails the step that reuses its id.
        let conf = format!(
            "ClusterName=fshmemtest\n\
             SlurmctldHost=localhost(127.0.0.1)\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={sock}\n\
             CredType=cred/munge\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={slurmd_port}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool\n\
             TmpFS={d}/tmp\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\n\
             SlurmdLogFile={d}/slurmd.log\n\
             ProctrackType=proctrack/pgid\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             SchedulerType=sched/builtin\n\
             MpiDefault=none\n\
             JobCompType=jobcomp/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             ReturnToService=2\n\
             SlurmdParameters=config_overrides\n\
             NodeName=fsnode NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN\n\
             PartitionName=debug Nodes=fsnode Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n"
        );
        std::fs::write(&s.conf, conf).expect("write slurm.conf");
        let c = s.conf.display().to_string();
        // munged must serve its socket before the Slurm daemons start.
        let sock_up = crate::wait_for(START_TIMEOUT, || Path::new(&sock).exists());
        s.check(sock_up, "munged created no socket");
        s.daemon(
            "slurmctld",
            Command::new(need("/usr/sbin/slurmctld")).args(["-D", "-f", &c]),
        );
        s.daemon(
            "slurmd",
            Command::new(need("/usr/sbin/slurmd")).args(["-D", "-N", "fsnode", "-f", &c]),
        );
        let up = crate::wait_for(START_TIMEOUT, || {
            let out = s
                .cmd(need("/usr/bin/sinfo"))
                .args(["-h", "-o", "%T"])
                .stderr(Stdio::null())
                .output();
            out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        });
        s.check(up, "the node did not become idle");
        s
    }

    fn daemon(&mut self, name: &'static str, cmd: &mut Command) {
        let log = std::fs::File::create(self.dir.join(format!("{name}.out")))
            .expect("create a daemon log");
        let child = cmd
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup a log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Panics with the daemons' logs unless `ok`; stops them first.
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            return;
        }
        self.stop();
        let mut logs = String::new();
        for f in [
            "munged.out",
            "munge/log",
            "slurmctld.out",
            "slurmctld.log",
            "slurmd.out",
            "slurmd.log",
        ] {
            let text = std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
            logs.push_str(&format!("--- {f}\n{text}\n"));
        }
        panic!("one-node Slurm: {what}\n{logs}");
    }

    /// A command (`srun`, `sinfo`...) pointed at this cluster.
    pub fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `srun` with `args` (the program and its arguments last), pointed at
    /// this cluster.
    pub fn srun<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut c = self.cmd(need("/usr/bin/srun"));
        c.args(args);
        c
    }

    fn stop(&mut self) {
        // Reverse order: slurmd, slurmctld, then munged.
        while let Some((_, mut child)) = self.daemons.pop() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
