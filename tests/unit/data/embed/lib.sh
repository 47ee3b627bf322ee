# shellcheck shell=sh
f() { :; };
