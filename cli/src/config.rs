//! `rpcwire serve --config FILE`: the flags of `serve` from a TOML file, one key per flag.
//!
//! The keys are the flags' long names (`max-frame = 1024`, `tokens = "tokens.txt"`,
//! `any-host = true`, `redact = ["card", "pin"]`; `_` may stand for `-`), read from clap's own
//! description of `serve`, so every flag has its key the moment it exists: nothing to add
//! here for a new flag. The file's keys become flags placed before those of the command line,
//! and a flag given on the command line overrides its key (a list flag replaces the file's
//! list). The file is checked as the command line is: an unknown key, or a value of the
//! wrong kind, is refused with the key named.

use std::ffi::OsString;
use std::path::Path;

/// Why a configuration file was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The file could not be read.
    #[error("--config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("--config {path}: {source}")]
    Toml {
        /// The file.
        path: String,
        /// Why.
        source: toml::de::Error,
    },
    /// A key that names no flag of `serve`.
    #[error("--config: `{0}` is not a flag of `rpcwire serve` (see `rpcwire serve --help`)")]
    UnknownKey(String),
    /// A value of a kind its flag does not take.
    #[error("--config: `{key}`: {why}")]
    Value {
        /// The key.
        key: String,
        /// Why.
        why: &'static str,
    },
}

/// The flag `key` names in `serve` (its long name, `_` read as `-`), if any.
fn flag<'c>(serve: &'c clap::Command, key: &str) -> Option<&'c clap::Arg> {
    let long = key.replace('_', "-");
    serve
        .get_arguments()
        .find(|a| a.get_long() == Some(long.as_str()) && a.get_id() != "config")
}

/// A scalar value as a flag's text.
fn scalar(key: &str, value: &toml::Value) -> Result<String, ConfigError> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        _ => Err(ConfigError::Value {
            key: key.to_owned(),
            why: "expected a string or a number",
        }),
    }
}

/// The flags `table` stands for, in `serve`'s terms, leaving out those `given` on the command
/// line (`given(id)`: the flag's id was on it).
pub(crate) fn flags_of(
    table: &toml::Table,
    serve: &clap::Command,
    given: &dyn Fn(&str) -> bool,
) -> Result<Vec<OsString>, ConfigError> {
    let mut out = Vec::new();
    for (key, value) in table {
        let arg = flag(serve, key).ok_or_else(|| ConfigError::UnknownKey(key.clone()))?;
        if given(arg.get_id().as_str()) {
            continue;
        }
        let long = format!("--{}", arg.get_long().unwrap_or_default());
        let takes_value = arg.get_action().takes_values();
        match (takes_value, value) {
            (false, toml::Value::Boolean(on)) => {
                if *on {
                    out.push(long.into());
                }
            }
            (false, _) => {
                return Err(ConfigError::Value {
                    key: key.clone(),
                    why: "expected true or false",
                })
            }
            (true, toml::Value::Array(items)) => {
                for item in items {
                    out.push(long.clone().into());
                    out.push(scalar(key, item)?.into());
                }
            }
            (true, value) => {
                out.push(long.into());
                out.push(scalar(key, value)?.into());
            }
        }
    }
    Ok(out)
}

/// Reads `path` as a table of flags.
pub(crate) fn read(path: &Path) -> Result<toml::Table, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    text.parse::<toml::Table>()
        .map_err(|source| ConfigError::Toml {
            path: shown,
            source,
        })
}

/// `argv` with the flags of `serve --config FILE` inserted after `serve` (before the command
/// line's own, which override them); `argv` itself when it is not `serve --config`.
/// `matches` are `argv`'s as parsed by `cli`.
pub(crate) fn with_config(
    argv: Vec<OsString>,
    cli: &clap::Command,
    matches: &clap::ArgMatches,
) -> Result<Vec<OsString>, ConfigError> {
    let Some(("serve", sub)) = matches.subcommand() else {
        return Ok(argv);
    };
    let Some(path) = sub.get_one::<std::path::PathBuf>("config") else {
        return Ok(argv);
    };
    let Some(serve) = cli.find_subcommand("serve") else {
        return Ok(argv);
    };
    let table = read(path)?;
    let given = |id: &str| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    let flags = flags_of(&table, serve, &given)?;
    // `serve` is the first argument that is neither a global flag nor its value.
    let mut at = 1;
    while let Some(arg) = argv.get(at) {
        match arg.to_str() {
            Some("--log-format") => at += 2,
            Some(a) if a.starts_with('-') => at += 1,
            _ => break,
        }
    }
    let mut out = argv;
    let tail = out.split_off(at + 1);
    out.extend(flags);
    out.extend(tail);
    Ok(out)
}
