//! A Redis (or Valkey) server for the shared stores' tests: `redis-server` (Debian's package,
//! installed by `.ci/install/redis.sh`) on a free loopback port, in a temporary folder,
//! persisting nothing; stopped, and its folder removed, on drop.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::brokers::free_port;

/// A running `redis-server` (or `valkey-server`) on 127.0.0.1; stopped on drop.
pub struct Redis {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: PathBuf,
}

/// The server binary: `redis-server`, else `valkey-server`, from the `PATH`.
fn server_binary() -> Option<&'static str> {
    ["redis-server", "valkey-server"].into_iter().find(|bin| {
        Command::new(bin)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// True when a `PING` on `port` is answered `+PONG`.
fn pong(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

impl Redis {
    /// Starts a server on a free loopback port in a fresh temporary folder (no persistence)
    /// and waits (up to 20 s) until it answers `PING`. `None` after [`crate::skip`] (a
    /// failure under `CI=true`) when neither `redis-server` nor `valkey-server` is installed.
    ///
    /// # Panics
    /// When the server starts but never answers.
    pub fn start() -> Option<Redis> {
        let Some(bin) = server_binary() else {
            crate::skip("Redis is not installed (.ci/install/redis.sh)");
            return None;
        };
        let port = free_port();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!(
            "rpcwire-redis-{}-{port}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let child = Command::new(bin)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let redis = Redis { child, port, dir };
        let until = Instant::now() + Duration::from_secs(20);
        while !pong(port) {
            assert!(
                Instant::now() < until,
                "redis-server never answered on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }

    /// Its URL, `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
