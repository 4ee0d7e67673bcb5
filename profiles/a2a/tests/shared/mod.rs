//! What the replica tests share: the server their replicas' stores connect to, and each
//! check run once per store.

/// A server of the test's own that replicas' stores connect to; stopped when dropped.
pub enum Server {
    #[cfg(feature = "postgres")]
    Postgres(rpcwire_tests::postgres::Postgres),
    #[cfg(feature = "redis")]
    Redis(rpcwire_tests::redis::Redis),
}

/// Runs check `$check` (an `async fn(&Server)`) as one test per store: `$check::postgres`,
/// `$check::redis`, each on a server of its own (skipped, visibly, when it is not installed).
macro_rules! on_every_store {
    ($check:ident) => {
        mod $check {
            #[cfg(feature = "postgres")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let pg = tokio::task::spawn_blocking(rpcwire_tests::postgres::Postgres::start);
                if let Some(pg) = pg.await.unwrap() {
                    super::$check(&super::Server::Postgres(pg)).await;
                }
            }

            #[cfg(feature = "redis")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let redis = tokio::task::spawn_blocking(rpcwire_tests::redis::Redis::start);
                if let Some(redis) = redis.await.unwrap() {
                    super::$check(&super::Server::Redis(redis)).await;
                }
            }
        }
    };
}
