//! Message brokers for the broker transports' tests: a `nats-server` started on a free
//! loopback port (Debian's `nats-server`, installed by `.ci/install/brokers.sh`), stopped on
//! drop.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server` on 127.0.0.1; killed on drop.
pub struct Nats {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl Nats {
    /// Starts `nats-server -a 127.0.0.1 -p PORT` and waits (up to 10 s) until it accepts
    /// connections. `None` after [`crate::skip`] (a failure under `CI=true`) when
    /// `nats-server` is not installed.
    ///
    /// # Panics
    /// When it starts but never listens.
    pub fn start() -> Option<Nats> {
        let installed = Command::new("nats-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            crate::skip("nats-server is not installed (.ci/install/brokers.sh)");
            return None;
        }
        let port = free_port();
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server starts");
        let nats = Nats { child, port };
        let until = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "nats-server never listened on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(nats)
    }

    /// Its URL, `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
