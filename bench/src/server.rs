//! Server processes: how to start one, where its TCP listener is, what it costs in memory.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::{Error, STALL};

/// The workspace root, from this package's manifest directory.
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// A server program and the arguments that come before the transport flag.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    /// Short name for reports, e.g. `rpcwire` or `plain loop`.
    pub name: String,
    /// The executable.
    pub program: PathBuf,
    /// Arguments before `--stdio` / `--tcp ADDR` (e.g. `serve`).
    pub args: Vec<String>,
}

impl ServerCommand {
    /// A command for `program args... extra...`.
    pub fn command(&self, extra: &[&str]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).args(extra);
        cmd
    }
}

/// A server listening on loopback TCP, killed when dropped.
#[derive(Debug)]
pub struct TcpServer {
    child: Child,
    addr: SocketAddr,
}

impl TcpServer {
    /// Starts `server --tcp 127.0.0.1:0 extra...` and waits (at most [`STALL`]) for the line
    /// on stderr that ends with the bound address. The rest of stderr is copied to ours, so
    /// that the server never blocks on a full pipe and its complaints are seen.
    pub fn start(server: &ServerCommand, extra: &[&str]) -> Result<TcpServer, Error> {
        let mut cmd = server.command(&["--tcp", "127.0.0.1:0"]);
        cmd.args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("cannot start {}", server.program.display()), e))?;
        let Some(stderr) = child.stderr.take() else {
            let _ = child.kill();
            return Err(Error::Server("no stderr pipe".into()));
        };
        let (tx, rx) = mpsc::channel();
        let name = server.name.clone();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent {
                    let addr = line
                        .rsplit(' ')
                        .next()
                        .and_then(|w| w.parse::<SocketAddr>().ok());
                    if let Some(addr) = addr {
                        sent = tx.send(addr).is_ok();
                        continue;
                    }
                }
                eprintln!("[{name}] {line}");
            }
        });
        match rx.recv_timeout(STALL) {
            Ok(addr) => Ok(TcpServer { child, addr }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(Error::Server(format!(
                    "{} did not print its listening address",
                    server.name
                )))
            }
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `/proc/PID/status` says about a process's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStatus {
    /// Resident set size, KiB.
    pub rss_kib: u64,
    /// Number of threads.
    pub threads: u64,
}

/// Reads `VmRSS` and `Threads` of process `pid` (Linux only).
pub fn proc_status(pid: u32) -> Result<ProcStatus, Error> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("read {path}"), e))?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    match (field("VmRSS:"), field("Threads:")) {
        (Some(rss_kib), Some(threads)) => Ok(ProcStatus { rss_kib, threads }),
        _ => Err(Error::Server(format!("{path}: no VmRSS or Threads line"))),
    }
}

/// CPU time (user plus system) that process `pid` has used so far, from `/proc/PID/stat`
/// (Linux only; clock ticks taken as 100 per second, as on every Linux target rpcwire runs on).
pub fn proc_cpu(pid: u32) -> Result<Duration, Error> {
    stat_cpu(&format!("/proc/{pid}/stat"), 11)
}

/// CPU time (user plus system) of the calling process's children that have exited and been
/// waited for, from `/proc/self/stat`: the cost of a tool run to its end, such as a load
/// generator, is the difference across the run.
pub fn children_cpu() -> Result<Duration, Error> {
    stat_cpu("/proc/self/stat", 13)
}

/// The sum of the two clock-tick fields at `index` and `index + 1` (counted after the command
/// name) of a `/proc/.../stat` file.
fn stat_cpu(path: &str, index: usize) -> Result<Duration, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(format!("read {path}"), e))?;
    // The command name (field 2) may hold spaces; the fields after it follow its closing ')'.
    let rest = text
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| Error::Server(format!("{path}: no command name")))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line (11 and 12 after the name), cutime and
    // cstime fields 16 and 17 (13 and 14).
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    match (tick(index), tick(index + 1)) {
        (Some(user), Some(system)) => Ok(Duration::from_millis((user + system) * 10)),
        _ => Err(Error::Server(format!("{path}: no CPU times"))),
    }
}

/// Waits up to `limit` for `child` to exit, then kills it. Returns whether it exited by itself.
pub(crate) fn reap(child: &mut Child, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return true,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// A child process, killed (and waited for) on drop: a broker or server a bench started.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program` with `args` on one worker thread (`RPCWIRE_THREADS=1`), its output
/// discarded.
pub fn spawn_one_thread(program: &Path, args: &[&str]) -> Result<Killed, Error> {
    Command::new(program)
        .args(args)
        .env("RPCWIRE_THREADS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Killed)
        .map_err(|e| Error::Server(format!("cannot start {}: {e}", program.display())))
}

/// The MQTT broker's command, where Debian installs it (`/usr/sbin`, often not on a user's
/// `PATH`); `None` when it is not installed.
pub fn mosquitto() -> Option<&'static str> {
    ["mosquitto", "/usr/sbin/mosquitto"]
        .into_iter()
        .find(|bin| {
            Command::new(bin)
                .arg("-h")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok()
        })
}
