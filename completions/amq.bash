# bash completion for amq (installed by `make install` as
# $(datadir)/bash-completion/completions/amq).  Commands come from
# `amq --help`; a command's options from the option table of its parser
# (`amq COMMAND --list-options WORDS...`, with the words typed so far, so that
# `export --to redis --shards N` offers that parser's); the names of kinds,
# formats, hashes and hash algorithms from
# `amq help kinds [create]|formats|hashes|algos`: nothing here to keep up to date.

_amq_commands() {
    amq --help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'
}

# _amq_option_table CMD WORDS...: "--name" or "--name ARG", one a line.
# --list-options goes right after CMD: before any "--", where amq looks for it.
_amq_option_table() {
    local cmd=$1
    shift
    amq "$cmd" --list-options "$@" 2>/dev/null
}

# _amq_options CMD WORDS...: the option names alone.
_amq_options() {
    _amq_option_table "$@" | cut -d' ' -f1
}

_amq() {
    local cur prev cmd table
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_amq_commands) --help --version" -- "$cur"))
        return 0
    fi
    cmd=${COMP_WORDS[1]}
    case "$prev" in
    --type)
        COMPREPLY=($(compgen -W "$(amq help kinds "$cmd" 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --hash)
        COMPREPLY=($(compgen -W "$(amq help hashes 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --algo)
        COMPREPLY=($(compgen -W "$(amq help algos 2>/dev/null)" -- "$cur"))
        return 0 ;;
    --from|--to)
        COMPREPLY=($(compgen -W "$(amq help formats 2>/dev/null)" -- "$cur"))
        return 0 ;;
    esac
    table=$(_amq_option_table "$cmd" "${COMP_WORDS[@]:2:COMP_CWORD-2}")
    if [ "${cur#-}" != "$cur" ]; then
        COMPREPLY=($(compgen -W "$(echo "$table" | cut -d' ' -f1)" -- "$cur"))
        return 0
    fi
    # The value of an option that takes one (a number, a file): files.
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
}

complete -o filenames -F _amq amq
