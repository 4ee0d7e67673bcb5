fn main() { eprintln!("rpcwire: not yet written"); std::process::exit(2) }
