# shellcheck shell=sh
# A script whose first line ends in a plain word: a newline ends `echo a` there, a space
# would make it `echo a echo b`, so cmake/embed.cmake must refuse it.
echo a
echo b
