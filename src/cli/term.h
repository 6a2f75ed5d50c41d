/* The terminal: its width, and a stream that folds long lines to it.
 *
 * Width: the terminal's (TIOCGWINSZ) when the stream is one, else $COLUMNS
 * (20..1000), else 80. Every text table and summary of the CLI is printed
 * through im__wrap_open so that no line is wider than that: a long line is
 * broken at a space (a word longer than the width is cut) and its
 * continuation lines are indented under the line's value column (the text
 * after a run of two or more spaces, e.g. "Label:      value") or two
 * spaces past the line's own indentation. ANSI colour sequences take no
 * width; a UTF-8 character takes one column.
 *
 * Ownership: the stream returned by im__wrap_open is the caller's, closed
 * with fclose (which writes a last unterminated line and leaves `under`
 * open). Thread-safety: as any FILE. */
#ifndef IM_CLI_TERM_H
#define IM_CLI_TERM_H

#include <stddef.h>
#include <stdio.h>

/* The width lines printed to f must fit. */
int im__term_width(FILE *f);

/* A stream writing to under, every line folded to width columns (width <
 * 20: 20). Falls back to under itself when the stream cannot be made (then
 * im__wrap_close is still the way to end it). */
FILE *im__wrap_open(FILE *under, int width);
/* Ends a stream of im__wrap_open (no-op for NULL or for `under` itself). */
void im__wrap_close(FILE *wrapped, FILE *under);

/* The columns a line takes (ANSI sequences none, a UTF-8 character one). */
size_t im__text_width(const char *s, size_t n);

/* Folds one line (s[0..n), no newline) to width, writing the pieces with
 * their newlines to out. */
void im__wrap_line(FILE *out, const char *s, size_t n, int width);

/* A stream for help texts: kept whole, then written to under with every
 * option whose lines are wider than width re-filled ("  --flag ARG   text"
 * and its indented continuation lines, the text re-flowed under its
 * column) and every other wide line folded as above. Lines that fit are
 * written as they are. Closed with im__wrap_close. */
FILE *im__help_open(FILE *under, int width);

/* The re-fill of im__help_open on a whole text (text[0..n)). */
void im__help_format(FILE *out, const char *text, size_t n, int width);

#endif
