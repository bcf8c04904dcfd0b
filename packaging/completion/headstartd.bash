# bash completion for headstartd: its long options, read from its own --help (bash-completion's _longopt).
complete -F _longopt headstartd
