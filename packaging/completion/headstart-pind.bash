# bash completion for headstart-pind: its long options, read from its own --help (bash-completion's _longopt).
complete -F _longopt headstart-pind
