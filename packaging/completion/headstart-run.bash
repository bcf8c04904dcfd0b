# bash completion for headstart-run: like sudo or nice, it runs a command, so complete that command and
# its arguments (bash-completion's _command).
complete -F _command headstart-run
