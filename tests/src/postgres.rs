//! A PostgreSQL server for the database-backed stores' tests: a cluster `initdb`'d in a
//! temporary folder and a `postgres` serving it on a free loopback port (Debian's packages,
//! installed by `.ci/install/postgres.sh`), stopped and removed on drop. As root, both run as
//! user `postgres`, since PostgreSQL refuses to run as root.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::brokers::free_port;

/// A running PostgreSQL on 127.0.0.1 with user `postgres` trusted (no password); stopped,
/// and its data removed, on drop.
pub struct Postgres {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
}

/// The folder with `initdb` and `postgres`: the newest of Debian's, or the `PATH`'s.
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
        .collect();
    // Versions as numbers: 9.6 before 15.
    dirs.sort_by_key(|d| {
        d.parent()
            .and_then(Path::file_name)
            .and_then(|v| v.to_str())
            .and_then(|v| v.split('.').next())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop().or_else(|| {
        let found = Command::new("initdb")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        found.then(PathBuf::new)
    })
}

/// Output of `id ARGS` as a number.
fn id(args: &[&str]) -> Option<u32> {
    let out = Command::new("id").args(args).output().ok()?;
    std::str::from_utf8(&out.stdout).ok()?.trim().parse().ok()
}

/// As root, the uid and gid of user `postgres` (PostgreSQL refuses to run as root).
fn postgres_user() -> Option<(u32, u32)> {
    if id(&["-u"]) != Some(0) {
        return None;
    }
    let user = id(&["-u", "postgres"]).zip(id(&["-g", "postgres"]));
    assert!(
        user.is_some(),
        "root, and no user postgres to run PostgreSQL as"
    );
    user
}

/// `bin` (in `dir`, or the `PATH`), as `user` when given. The user is set in the child itself
/// (no `runuser` between), so that the child is the server and a signal to it reaches it.
fn command(dir: &Path, bin: &str, user: Option<(u32, u32)>) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(dir.join(bin));
    if let Some((uid, gid)) = user {
        // From a folder the user may enter (initdb and postgres change back to it).
        c.uid(uid).gid(gid).current_dir("/");
    }
    c
}

impl Postgres {
    /// Initializes a cluster in a fresh temporary folder, starts its server and waits (up to
    /// 30 s) until it accepts connections. `None` after [`crate::skip`] (a failure under
    /// `CI=true`) when PostgreSQL is not installed.
    ///
    /// # Panics
    /// When `initdb` fails, or the server starts but never accepts connections.
    pub fn start() -> Option<Postgres> {
        let Some(bin) = bin_dir() else {
            crate::skip("PostgreSQL is not installed (.ci/install/postgres.sh)");
            return None;
        };
        let user = postgres_user();
        let port = free_port();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("rpcwire-pg-{}-{port}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown postgres");
        }
        let data = dir.join("data");
        let init = command(&bin, "initdb", user)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .stdout(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(
            init.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        // fsync off: a test's data need not survive a crash of the machine.
        let child = command(&bin, "postgres", user)
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&dir)
            .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-F"])
            .args(["-c", "max_connections=100"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts");
        let pg = Postgres { child, port, dir };
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            // Listening is not enough: it refuses connections while it starts up.
            let ready = TcpStream::connect(("127.0.0.1", port)).is_ok()
                && Command::new(bin.join("pg_isready"))
                    .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                    .status()
                    .is_ok_and(|s| s.success());
            if ready {
                return Some(pg);
            }
            assert!(
                Instant::now() < until,
                "postgres never accepted connections on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its URL, `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: a fast shutdown (sessions ended, no checkpoint wait); killed if it lingers.
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
