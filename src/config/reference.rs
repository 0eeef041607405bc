//! The command-line reference as Markdown, rendered from the clap definitions of
//! [`super::Cli`]: kept apart from the definitions, which it only reads.

use super::Cli;

/// The command-line reference as Markdown: one section per subcommand, one table row per flag
/// with its environment variable, default and help text. `docs/configuration.md` holds this
/// text, and a test keeps the two equal.
pub fn reference_markdown() -> String {
    let cli = <Cli as clap::CommandFactory>::command();
    let mut out = String::new();
    for command in cli.get_subcommands() {
        command_markdown(command, "basalt", &mut out);
    }
    out
}

/// One subcommand's section (and those of its own subcommands) appended to `out`.
fn command_markdown(command: &clap::Command, parent: &str, out: &mut String) {
    let name = format!("{parent} {}", command.get_name());
    out.push_str(&format!("\n## `{name}`\n\n"));
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        out.push_str(&sentence(&about.to_string()));
        out.push_str("\n\n");
    }
    let args: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && arg.get_long().is_some())
        .collect();
    if args.is_empty() {
        out.push_str("No flags.\n");
    } else {
        out.push_str("| Flag | Environment variable | Default | Meaning |\n");
        out.push_str("|---|---|---|---|\n");
        for arg in args {
            out.push_str(&arg_row(arg));
        }
    }
    for sub in command.get_subcommands() {
        command_markdown(sub, &name, out);
    }
}

/// One flag's table row.
fn arg_row(arg: &clap::Arg) -> String {
    let mut flag = String::new();
    if let Some(short) = arg.get_short() {
        flag.push_str(&format!("`-{short}`, "));
    }
    if let Some(long) = arg.get_long() {
        flag.push_str(&format!("`--{long}`"));
    }
    let env = arg
        .get_env()
        .map(|env| format!("`{}`", env.to_string_lossy()))
        .unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|value| value.to_string_lossy().into_owned())
        .collect();
    let default = if arg.is_required_set() {
        "required".to_owned()
    } else if !arg.get_action().takes_values() {
        "off".to_owned()
    } else if defaults.is_empty() {
        "unset".to_owned()
    } else {
        format!("`{}`", defaults.join(","))
    };
    let help = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|help| sentence(&help.to_string()))
        .unwrap_or_default();
    let meaning = format!("{help}{}", values_note(arg));
    format!(
        "| {flag} | {env} | {default} | {} |\n",
        cell(&link_docs(&meaning))
    )
}

/// What values a flag takes, when its help text does not say: `true`/`false` for the
/// boolean ones that take a value, the names of an enumeration's values.
fn values_note(arg: &clap::Arg) -> String {
    if !arg.get_action().takes_values() {
        return String::new();
    }
    let values = arg.get_possible_values();
    let names: Vec<&str> = values.iter().map(|value| value.get_name()).collect();
    if names == ["true", "false"] {
        let long = arg.get_long().unwrap_or_default();
        let optional = arg.get_num_args().is_some_and(|n| n.min_values() == 0);
        return if optional {
            format!(" `--{long}` alone means `true`.")
        } else {
            format!(" Takes a value: `--{long} true`.")
        };
    }
    if values.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = values
        .iter()
        .map(|value| match value.get_help() {
            Some(help) => format!(
                "`{}` ({})",
                value.get_name(),
                lowercase_first(&help.to_string())
            ),
            None => format!("`{}`", value.get_name()),
        })
        .collect();
    format!(" Values: {}.", listed.join(", "))
}

/// Help text as one line ending with a full stop (clap drops the stop of one-sentence help).
fn sentence(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = line.trim_end_matches('.');
    format!("{line}.")
}

/// `text` with its first letter in lower case, for a help text set inside a sentence.
fn lowercase_first(text: &str) -> String {
    let text = text.trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `docs/<page>.md` code spans as links, relative to `docs/` where the reference is written.
fn link_docs(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("`docs/") {
        let after = &rest[start + "`docs/".len()..];
        match after.find('`') {
            Some(end) if !after[..end].contains(char::is_whitespace) => {
                let target = &after[..end];
                let page = target.split('#').next().unwrap_or(target);
                out.push_str(&rest[..start]);
                out.push_str(&format!("[docs/{page}]({target})"));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..start + 1]);
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` made safe inside a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}
