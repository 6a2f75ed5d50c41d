/* Text of the simulated model.
 *
 * The "model" has no context beyond a small grammar: prose is made of
 * sentences (subject noun phrase or pronoun, verb, object, optional
 * prepositional phrases and a second clause), code of C-like lines (function
 * headers, declarations, assignments, if/for blocks, calls, comments,
 * returns). Every slot draws a word from its class with a Zipf-Mandelbrot
 * law: temperature divides the exponent (flatter at high temperature) and
 * top_p keeps the head of the law, as nucleus sampling would, but never
 * fewer than a quarter of the class, so that low top_p still reads like
 * words. A sentence or line is built into g->queue and emitted one piece at
 * a time.
 *
 * Degeneration: at each sentence or line boundary the generator may start
 * copying an earlier sentence or line from its own history (g->hist), the
 * way language models fall into loops under narrow sampling. The chance of
 * starting, and of repeating the copied span again, grows as top_p falls
 * below 0.8 and is highest from 0.3 down (also as temperature approaches 0,
 * greedy decoding); at top_p >= 0.8 there are no loops, and the 4-gram
 * repetition left is the grammar's own (about 0.00-0.01 for prose, 0.03-0.05
 * for code over 256 pieces). Copies start where an
 * earlier sentence started and stop after copying a sentence end, so the
 * loops read as repeated sentences ("... . The model uses the data. The
 * model uses the data."). */
#include "text/textgen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/simpletok.h"

#define NO 0xFFFF /* no second piece */

/* ---- Generated tables --------------------------------------------------
 * Generated once by a script from hand-written word lists (our own words,
 * ordered by a rough sense of their frequency, most frequent first) and
 * checked in; edit by hand if needed. piece_text holds each distinct piece
 * once; a word class lists its words as {piece, second piece or NO} (long
 * words come as a head with its leading space and a tail, the way BPE cuts
 * them); w_start and the code classes list {with leading space, without}. */
/* clang-format off */
/* 610 pieces. */
static const char *const piece_text[] = {
    ".", ",", "?", "!", ":", ";", "\n", "\n\n", " (", ")", " -", "'s", " the", " a", " this",
    " that", " each", " every", " some", " our", " their", " its", " another", " one", " no",
    " any", " it", " we", " they", " he", " she", " new", " small", " large", " good",
    " important", " simple", " common", " main", " other", " same", " different", " single",
    " final", " whole", " early", " local", " short", " long", " clear", " fast", " slow",
    " open", " hard", " easy", " free", " full", " real", " recent", " useful", " careful",
    " strong", " public", " private", " low", " high", " old", " young", " quiet", " bright",
    " dark", " heavy", " light", " warm", " cold", " rare", " broad", " narrow", " signific",
    "ant", " particul", "ar", " tradition", "al", " reli", "able", " effic", "ient", " avail",
    " comfort", " environ", "mental", " system", " data", " time", " way", " model", " number",
    " part", " work", " result", " user", " group", " problem", " process", " value", " change",
    " question", " answer", " city", " water", " house", " world", " report", " team", " line",
    " word", " day", " year", " plan", " test", " point", " file", " idea", " book", " road",
    " river", " window", " garden", " table", " market", " price", " story", " field", " paper",
    " method", " level", " rule", " source", " server", " memory", " request", " network",
    " student", " teacher", " village", " machine", " engine", " signal", " color", " winter",
    " summer", " morning", " evening", " sound", " voice", " letter", " message", " record",
    " picture", " building", " bridge", " station", " island", " forest", " mountain", " kitchen",
    " office", " library", " project", " design", " pattern", " structure", " history",
    " language", " example", " reason", " choice", " family", " friend", " doctor", " farmer",
    " driver", " reader", " writer", " worker", " camera", " battery", " inform", "ation",
    " develop", "ment", " import", "ance", " experi", "ence", " consider", " organ", "ization",
    " tech", "nology", " perform", " relation", "ship", " commun", "ity", " govern", " manage",
    " infra", "structure", " knowl", "edge", " independ", " research", "er", " custom",
    " neighbour", "hood", " improve", " temper", "ature", " opportun", " comput", " direct",
    "ion", " is", " was", " has", " uses", " makes", " shows", " needs", " takes", " gives",
    " finds", " keeps", " holds", " brings", " changes", " follows", " helps", " builds",
    " opens", " reads", " writes", " sends", " starts", " moves", " turns", " carries",
    " describes", " explains", " improves", " reduces", " supports", " includes", " requires",
    " produces", " covers", " returns", " measures", " prepares", " checks", " connects",
    " protects", " used", " made", " showed", " needed", " took", " gave", " found", " kept",
    " held", " brought", " changed", " followed", " helped", " built", " opened", " read",
    " wrote", " sent", " started", " moved", " turned", " described", " explained", " improved",
    " reduced", " supported", " often", " also", " never", " usually", " quickly", " slowly",
    " rarely", " always", " simply", " clearly", " already", " soon", " still", " nearly",
    " only", " probab", "ly", " approx", "imately", " especial", " frequent", " of", " in", " to",
    " for", " with", " on", " at", " from", " by", " about", " into", " over", " after",
    " before", " through", " under", " between", " during", " and", " but", " or", " so",
    " because", " while", " although", " when", " The", "The", " A", "A", " This", "This",
    " That", "That", " Each", "Each", " Every", "Every", " Some", "Some", " Our", "Our", " Their",
    "Their", " Its", "Its", " Another", "Another", " One", "One", " No", "No", " Any", "Any",
    " It", "It", " We", "We", " They", "They", " He", "He", " She", "She", " However", "However",
    " Today", "Today", " Then", "Then", " Finally", "Finally", " Meanwhile", "Meanwhile",
    " Often", "Often", " Still", "Still", " Later", "Later", "{", "}", " {", "(", "[", "]", "->",
    "++", "--", "\n    ", "\n        ", "\n            ", "//", " *", "&", "*", " =", " ==",
    " !=", " <", " >", " <=", " >=", " +", " /", " %", " &&", " ||", " +=", " -=", " &", " |",
    " <<", " >>", " int", "int", " size_t", "size_t", " char", "char", " double", "double",
    " bool", "bool", " uint32_t", "uint32_t", " uint64_t", "uint64_t", " float", "float", "long",
    " i", "i", " n", "n", " x", "x", " y", "y", " len", "len", " buf", "buf", " count", "count",
    "data", " ptr", "ptr", " size", "size", " key", "key", "value", " node", "node", " next",
    "next", "result", " err", "err", " ctx", "ctx", " out", "out", "in", " list", "list", " item",
    "item", " index", "index", " total", "total", " offset", "offset", " name", "name", " head",
    "head", " tail", "tail", " str", "str", " cur", "cur", " prev", "prev", " tmp", "tmp",
    " start", "start", " end", "end", " state", "state", " msg", "msg", " flags", "flags",
    " limit", "limit", " pos", "pos", " init", "init", " parse", "parse", "read", " write",
    "write", " update", "update", " compute", "compute", " lookup", "lookup", " push", "push",
    " pop", "pop", " append", "append", " reset", "reset", " check", "check", " hash", "hash",
    " encode", "encode", " decode", "decode", " alloc", "alloc", " release", "release", " find",
    "find", " insert", "insert", " remove", "remove", " emit", "emit", " flush", "flush", " 0",
    "0", " 1", "1", " 2", "2", " 4", "4", " 8", "8", " 16", "16", " 32", "32", " 64", "64",
    " 100", "100", " 255", "255", " 1024", "1024", " if", "if", "for", "while", " return",
    "return", " else", "else", " break", "break", " continue", "continue", " static", "static",
    " const", "const", " struct", "struct", " void", "void", "_len", "_count", "_size", "_idx",
    "_ptr", "_id", "_max", "_buf", "_next", "_out",
};
enum {
  P_PERIOD = 0,
  P_COMMA = 1,
  P_QUESTION = 2,
  P_BANG = 3,
  P_COLON = 4,
  P_SEMI = 5,
  P_NL = 6,
  P_PARA = 7,
  P_SP_LPAREN = 8,
  P_RPAREN = 9,
  P_SP_DASH = 10,
  P_POSS = 11,
  P_LBRACE = 392,
  P_RBRACE = 393,
  P_SP_LBRACE = 394,
  P_LPAREN = 395,
  P_LBRACKET = 396,
  P_RBRACKET = 397,
  P_ARROW = 398,
  P_INCR = 399,
  P_DECR = 400,
  P_NL_IND1 = 401,
  P_NL_IND2 = 402,
  P_NL_IND3 = 403,
  P_COMMENT = 404,
  P_SP_STAR = 405,
  P_AMP = 406,
  P_STAR = 407,
  P_SP_ASSIGN = 408,
  P_SP_LT = 411,
  N_PIECES = 610
};
static const uint16_t w_det[][2] = {
    {12, NO}, {13, NO}, {14, NO}, {15, NO}, {16, NO}, {17, NO}, {18, NO}, {19, NO}, {20, NO},
    {21, NO}, {22, NO}, {23, NO}, {24, NO}, {25, NO},
};
static const uint16_t w_pron[][2] = {
    {26, NO}, {27, NO}, {28, NO}, {14, NO}, {29, NO}, {30, NO},
};
static const uint16_t w_adj[][2] = {
    {31, NO}, {32, NO}, {33, NO}, {34, NO}, {35, NO}, {36, NO}, {37, NO}, {38, NO}, {39, NO},
    {40, NO}, {41, NO}, {42, NO}, {43, NO}, {44, NO}, {45, NO}, {46, NO}, {47, NO}, {48, NO},
    {49, NO}, {50, NO}, {51, NO}, {52, NO}, {53, NO}, {54, NO}, {55, NO}, {56, NO}, {57, NO},
    {58, NO}, {59, NO}, {60, NO}, {61, NO}, {62, NO}, {63, NO}, {64, NO}, {65, NO}, {66, NO},
    {67, NO}, {68, NO}, {69, NO}, {70, NO}, {71, NO}, {72, NO}, {73, NO}, {74, NO}, {75, NO},
    {76, NO}, {77, NO}, {78, 79}, {80, 81}, {82, 83}, {84, 85}, {86, 87}, {88, 85}, {89, 85},
    {90, 91},
};
static const uint16_t w_noun[][2] = {
    {92, NO}, {93, NO}, {94, NO}, {95, NO}, {96, NO}, {97, NO}, {98, NO}, {99, NO}, {100, NO},
    {101, NO}, {102, NO}, {103, NO}, {104, NO}, {105, NO}, {106, NO}, {107, NO}, {108, NO},
    {109, NO}, {110, NO}, {111, NO}, {112, NO}, {113, NO}, {114, NO}, {115, NO}, {116, NO},
    {117, NO}, {118, NO}, {119, NO}, {120, NO}, {121, NO}, {122, NO}, {123, NO}, {124, NO},
    {125, NO}, {126, NO}, {127, NO}, {128, NO}, {129, NO}, {130, NO}, {131, NO}, {132, NO},
    {133, NO}, {134, NO}, {135, NO}, {136, NO}, {137, NO}, {138, NO}, {139, NO}, {140, NO},
    {141, NO}, {142, NO}, {143, NO}, {144, NO}, {145, NO}, {146, NO}, {147, NO}, {148, NO},
    {149, NO}, {150, NO}, {151, NO}, {152, NO}, {153, NO}, {72, NO}, {154, NO}, {155, NO},
    {156, NO}, {157, NO}, {158, NO}, {159, NO}, {160, NO}, {161, NO}, {162, NO}, {163, NO},
    {164, NO}, {165, NO}, {166, NO}, {167, NO}, {168, NO}, {169, NO}, {170, NO}, {171, NO},
    {172, NO}, {173, NO}, {174, NO}, {175, NO}, {176, NO}, {177, NO}, {178, NO}, {179, NO},
    {180, NO}, {181, NO}, {182, NO}, {183, NO}, {184, NO}, {185, NO}, {186, NO}, {187, NO},
    {188, 189}, {190, 191}, {192, 193}, {194, 195}, {90, 191}, {196, 189}, {197, 198}, {199, 200},
    {201, 193}, {202, 203}, {204, 205}, {206, 191}, {207, 191}, {208, 209}, {210, 211},
    {212, 195}, {213, 214}, {215, 214}, {216, 217}, {218, 191}, {219, 220}, {221, 205},
    {222, 189}, {223, 224},
};
static const uint16_t w_verb[][2] = {
    {225, NO}, {226, NO}, {227, NO}, {228, NO}, {229, NO}, {230, NO}, {231, NO}, {232, NO},
    {233, NO}, {234, NO}, {235, NO}, {236, NO}, {237, NO}, {238, NO}, {239, NO}, {240, NO},
    {241, NO}, {242, NO}, {243, NO}, {244, NO}, {245, NO}, {246, NO}, {247, NO}, {248, NO},
    {249, NO}, {250, NO}, {251, NO}, {252, NO}, {253, NO}, {254, NO}, {255, NO}, {256, NO},
    {257, NO}, {258, NO}, {259, NO}, {260, NO}, {261, NO}, {262, NO}, {263, NO}, {264, NO},
};
static const uint16_t w_verb_ed[][2] = {
    {265, NO}, {266, NO}, {267, NO}, {268, NO}, {269, NO}, {270, NO}, {271, NO}, {272, NO},
    {273, NO}, {274, NO}, {275, NO}, {276, NO}, {277, NO}, {278, NO}, {279, NO}, {280, NO},
    {281, NO}, {282, NO}, {283, NO}, {284, NO}, {285, NO}, {286, NO}, {287, NO}, {288, NO},
    {289, NO}, {290, NO},
};
static const uint16_t w_adv[][2] = {
    {291, NO}, {292, NO}, {293, NO}, {294, NO}, {295, NO}, {296, NO}, {297, NO}, {298, NO},
    {299, NO}, {300, NO}, {301, NO}, {302, NO}, {303, NO}, {304, NO}, {305, NO}, {306, 307},
    {308, 309}, {310, 307}, {311, 307},
};
static const uint16_t w_prep[][2] = {
    {312, NO}, {313, NO}, {314, NO}, {315, NO}, {316, NO}, {317, NO}, {318, NO}, {319, NO},
    {320, NO}, {321, NO}, {322, NO}, {323, NO}, {324, NO}, {325, NO}, {326, NO}, {327, NO},
    {328, NO}, {329, NO},
};
static const uint16_t w_conj[][2] = {
    {330, NO}, {331, NO}, {332, NO}, {333, NO}, {334, NO}, {335, NO}, {336, NO}, {337, NO},
};
static const uint16_t w_start[][2] = {
    {338, 339}, {340, 341}, {342, 343}, {344, 345}, {346, 347}, {348, 349}, {350, 351},
    {352, 353}, {354, 355}, {356, 357}, {358, 359}, {360, 361}, {362, 363}, {364, 365},
    {366, 367}, {368, 369}, {370, 371}, {342, 343}, {372, 373}, {374, 375}, {376, 377},
    {378, 379}, {380, 381}, {382, 383}, {384, 385}, {386, 387}, {388, 389}, {390, 391},
};
#define N_START_WORDS 20 /* the rest of w_start are adverbs, followed by ',' */
static const uint16_t c_type[][2] = {
    {426, 427}, {428, 429}, {430, 431}, {432, 433}, {434, 435}, {436, 437}, {438, 439},
    {440, 441}, {48, 442},
};
static const uint16_t c_ident[][2] = {
    {443, 444}, {445, 446}, {447, 448}, {449, 450}, {451, 452}, {453, 454}, {455, 456}, {93, 457},
    {458, 459}, {460, 461}, {462, 463}, {105, 464}, {465, 466}, {467, 468}, {100, 469},
    {470, 471}, {472, 473}, {474, 475}, {313, 476}, {477, 478}, {479, 480}, {481, 482},
    {483, 484}, {485, 486}, {487, 488}, {489, 490}, {491, 492}, {493, 494}, {495, 496},
    {497, 498}, {499, 500}, {501, 502}, {503, 504}, {505, 506}, {507, 508}, {509, 510},
    {511, 512}, {513, 514},
};
static const uint16_t c_func[][2] = {
    {515, 516}, {517, 518}, {280, 519}, {520, 521}, {522, 523}, {524, 525}, {526, 527},
    {528, 529}, {530, 531}, {532, 533}, {534, 535}, {536, 537}, {538, 539}, {540, 541},
    {542, 543}, {544, 545}, {546, 547}, {548, 549}, {550, 551}, {552, 553}, {554, 555},
    {556, 557},
};
static const uint16_t c_num[][2] = {
    {558, 559}, {560, 561}, {562, 563}, {564, 565}, {566, 567}, {568, 569}, {570, 571},
    {572, 573}, {574, 575}, {576, 577}, {578, 579},
};
static const uint16_t c_kw[][2] = {
    {580, 581}, {315, 582}, {335, 583}, {584, 585}, {586, 587}, {588, 589}, {590, 591},
    {592, 593}, {594, 595}, {596, 597}, {598, 599}, {426, 427}, {430, 431}, {428, 429},
    {434, 435}, {432, 433}, {436, 437},
};
static const uint16_t c_suffix[][2] = {
    {600, NO}, {601, NO}, {602, NO}, {603, NO}, {604, NO}, {605, NO}, {606, NO}, {607, NO},
    {608, NO}, {609, NO},
};
static const uint16_t c_op[][2] = {
    {408, NO}, {409, NO}, {410, NO}, {411, NO}, {412, NO}, {413, NO}, {414, NO}, {415, NO},
    {10, NO}, {405, NO}, {416, NO}, {417, NO}, {418, NO}, {419, NO}, {420, NO}, {421, NO},
    {422, NO}, {423, NO}, {424, NO}, {425, NO},
};
/* clang-format on */
/* ---- End of generated tables ------------------------------------------ */

#define N_ROWS(t) (sizeof(t) / sizeof((t)[0]))
#define HIST 64u
#define QMAX 64u

/* Zipf-Mandelbrot rank offset and exponent at temperature 1. q = 1.5 keeps
 * the most frequent word of a class near 15-30% (a pure Zipf law would give
 * the first of 15 determiners 30% at temperature 1 and over 45% at 0.7). */
#define ZIPF_Q 1.5
#define ZIPF_S1 1.0
#define CODE_FLATTEN 0.75

/* Indexes into c_kw and c_op (order of the generator's lists). */
enum { KW_IF = 0, KW_FOR = 1, KW_RETURN = 3, KW_CONST = 8 };
static const uint8_t op_compare[] = {1, 2, 3, 4, 5, 6};
static const uint8_t op_binary[] = {7, 8, 9, 10, 11, 12, 13, 16, 17, 18, 19};
static const uint8_t op_assign[] = {0, 0, 0, 0, 14, 15};
enum { PRON_WE = 1, PRON_THEY = 2 };

_Static_assert(N_PIECES == N_ROWS(piece_text), "piece table and its count disagree");
_Static_assert(QMAX == N_ROWS(((struct im_textgen *)0)->queue), "queue size");
_Static_assert(HIST == N_ROWS(((struct im_textgen *)0)->hist), "history size");
_Static_assert(N_PIECES < IM_SIMPLETOK_VOCAB - 256, "pieces must map to distinct ids");

size_t im_textgen_vocab_size(void) {
  return N_PIECES;
}

const char *im_textgen_piece(uint32_t index, size_t *len) {
  const char *s = index < N_PIECES ? piece_text[index] : "";
  if (len)
    *len = strlen(s);
  return s;
}

/* Piece index -> token id: an affine map modulo the id range, injective
 * because 7919 (prime) does not divide IM_SIMPLETOK_VOCAB - 256 = 2^11 * 63,
 * so different pieces never share an id and the repetition rate of ids is
 * that of the text. */
static uint32_t piece_id(uint32_t index) {
  return 256u + (uint32_t)(((uint64_t)index * 7919u + 104729u) % (IM_SIMPLETOK_VOCAB - 256u));
}

/* After a newline the next sentence or line starts without a space. */
static bool is_line_end(uint32_t piece) {
  return piece == P_NL || piece == P_PARA || piece == P_NL_IND1 || piece == P_NL_IND2 ||
         piece == P_NL_IND3;
}

static bool is_boundary(uint32_t piece) {
  return piece == P_PERIOD || piece == P_QUESTION || piece == P_BANG || is_line_end(piece);
}

/* CDF of the continuous Zipf-Mandelbrot law on [a, b) with exponent 1 - e. */
static double zipf_cdf(double a, double b, double e, double x) {
  if (fabs(e) < 1e-9)
    return log(x / a) / log(b / a);
  return (pow(x, e) - pow(a, e)) / (pow(b, e) - pow(a, e));
}

void im_textgen_top_logprobs(const struct im_textgen *g, uint32_t n, double *out) {
  const uint32_t cls = 256;
  double a = 1.0 + ZIPF_Q, b = (double)cls + 1.0 + ZIPF_Q, e = 1.0 - g->zipf_s;
  double f = 1.0;
  if (g->top_p < 1.0) { /* the nucleus, as zipf() cuts it */
    double fk = zipf_cdf(a, b, e, a + cls / 4);
    f = g->top_p > fk ? g->top_p : fk;
  }
  for (uint32_t k = 0; k < n; k++) {
    double lo = zipf_cdf(a, b, e, a + k), hi = zipf_cdf(a, b, e, a + k + 1);
    if (hi > f)
      hi = f;
    double p = (hi - lo) / f;
    out[k] = p > 0.0 ? log(p) : -1e4; /* outside the nucleus: never sampled */
  }
}

/* Rank in [0, n) by inverting the continuous law (O(1), no table): ranks
 * are ordered by probability, so top_p is a cut of the uniform variate. */
static uint32_t zipf(struct im_textgen *g, uint32_t n) {
  if (n <= 1)
    return 0;
  double a = 1.0 + ZIPF_Q, b = (double)n + 1.0 + ZIPF_Q, e = 1.0 - g->zipf_s;
  double f = 1.0;
  if (g->top_p < 1.0) {
    uint32_t kmin = n / 4 < 2 ? 2 : n / 4;
    double fk = zipf_cdf(a, b, e, a + kmin);
    f = g->top_p > fk ? g->top_p : fk;
  }
  double u = im_rng_uniform(&g->rng) * f, x;
  if (fabs(e) < 1e-9)
    x = a * pow(b / a, u);
  else
    x = pow(pow(a, e) + u * (pow(b, e) - pow(a, e)), 1.0 / e);
  if (!(x >= a)) /* rounding, or NaN */
    x = a;
  uint32_t k = (uint32_t)(x - a);
  return k < n ? k : n - 1;
}

static bool chance(struct im_textgen *g, double p) {
  return im_rng_uniform(&g->rng) < p;
}

static void push(struct im_textgen *g, uint32_t piece) {
  if (g->q_len < QMAX)
    g->queue[g->q_len++] = (uint16_t)piece;
}

/* A word of a class; col picks the spaced (0) or unspaced (1) form of
 * two-form classes. For word classes col must be 0 (second column is a tail). */
static void push_word(struct im_textgen *g, const uint16_t (*tab)[2], size_t n) {
  uint32_t k = zipf(g, (uint32_t)n);
  push(g, tab[k][0]);
  if (tab[k][1] != NO)
    push(g, tab[k][1]);
}

#define WORD(g, tab) push_word(g, tab, N_ROWS(tab))
#define FORM(g, tab, col) push(g, tab[zipf(g, N_ROWS(tab))][col])

static void push_np(struct im_textgen *g) {
  WORD(g, w_det);
  if (chance(g, 0.4))
    WORD(g, w_adj);
  WORD(g, w_noun);
}

/* Subject, verb, object: returns nothing, fills the queue. cap_col is the
 * w_start column for a capitalised first word, or -1 for lower case. */
static void push_clause(struct im_textgen *g, int cap_col) {
  bool past = chance(g, 0.3);
  if (chance(g, 0.25)) {
    uint32_t k = zipf(g, N_ROWS(w_pron));
    push(g, cap_col >= 0 ? w_start[N_ROWS(w_det) + k][cap_col] : w_pron[k][0]);
    past = past || k == PRON_WE || k == PRON_THEY; /* "we uses" */
  } else {
    uint32_t k = zipf(g, N_ROWS(w_det));
    push(g, cap_col >= 0 ? w_start[k][cap_col] : w_det[k][0]);
    if (chance(g, 0.4))
      WORD(g, w_adj);
    WORD(g, w_noun);
  }
  if (chance(g, 0.15))
    WORD(g, w_adv);
  if (past)
    WORD(g, w_verb_ed);
  else
    WORD(g, w_verb);
  push_np(g);
  for (int k = 0; k < 2 && chance(g, k == 0 ? 0.55 : 0.2); k++) {
    WORD(g, w_prep);
    push_np(g);
  }
}

static void gen_sentence(struct im_textgen *g, bool line_start) {
  int col = line_start ? 1 : 0;
  if (chance(g, 0.1)) {
    size_t n_adv = N_ROWS(w_start) - N_START_WORDS;
    push(g, w_start[N_START_WORDS + im_rng_below(&g->rng, n_adv)][col]);
    push(g, P_COMMA);
    push_clause(g, -1);
  } else {
    push_clause(g, col);
  }
  if (chance(g, 0.25)) {
    push(g, P_COMMA);
    WORD(g, w_conj);
    push_clause(g, -1);
  }
  double r = im_rng_uniform(&g->rng);
  push(g, r < 0.05 ? P_QUESTION : r < 0.08 ? P_BANG : P_PERIOD);
  if (chance(g, 0.15))
    push(g, P_PARA);
}

/* Newline carrying the indentation of the next line, as code-trained BPE
 * vocabularies have it ("\n" followed by 4, 8, 12 spaces is one piece). */
static uint32_t nl_indent(unsigned depth) {
  return depth == 0 ? P_NL : depth == 1 ? P_NL_IND1 : depth == 2 ? P_NL_IND2 : P_NL_IND3;
}

static void push_ident(struct im_textgen *g, int col) {
  FORM(g, c_ident, col);
  if (chance(g, 0.25))
    WORD(g, c_suffix);
}

/* Ends a line. Whether the next line closes the block is decided here, so
 * that the newline piece can carry the next line's indentation. */
static void end_line(struct im_textgen *g, bool opened) {
  if (g->indent == 0) {
    push(g, P_PARA); /* after the closing brace of a function */
    return;
  }
  g->close_next = !opened && chance(g, 0.05 + 0.07 * g->indent);
  push(g, nl_indent(g->close_next ? g->indent - 1u : g->indent));
}

static void push_expr(struct im_textgen *g) {
  double r = im_rng_uniform(&g->rng);
  if (r < 0.35) {
    FORM(g, c_ident, 0);
  } else if (r < 0.5) {
    FORM(g, c_num, 0);
  } else if (r < 0.7) {
    FORM(g, c_ident, 0);
    push(g, c_op[op_binary[im_rng_below(&g->rng, sizeof op_binary)]][0]);
    FORM(g, c_ident, 0);
  } else {
    if (r < 0.82)
      FORM(g, c_func, 0);
    else
      FORM(g, c_ident, 0);
    uint32_t open = r < 0.82 ? P_LPAREN : r < 0.91 ? P_ARROW : P_LBRACKET;
    push(g, open);
    FORM(g, c_ident, 1);
    if (open == P_LPAREN)
      push(g, P_RPAREN);
    else if (open == P_LBRACKET)
      push(g, P_RBRACKET);
  }
}

static void push_comment(struct im_textgen *g) {
  push(g, P_COMMENT);
  WORD(g, w_det);
  WORD(g, w_noun);
  WORD(g, w_verb);
  push_np(g);
}

static void push_block_head(struct im_textgen *g, bool is_for) {
  if (!is_for) {
    push(g, c_kw[KW_IF][1]);
    push(g, P_SP_LPAREN);
    push_ident(g, 1);
    push(g, c_op[op_compare[im_rng_below(&g->rng, sizeof op_compare)]][0]);
    push_expr(g);
  } else {
    uint32_t k = zipf(g, N_ROWS(c_ident));
    push(g, c_kw[KW_FOR][1]);
    push(g, P_SP_LPAREN);
    push(g, c_ident[k][1]);
    push(g, P_SP_ASSIGN);
    push(g, c_num[0][0]);
    push(g, P_SEMI);
    push(g, c_ident[k][0]);
    push(g, P_SP_LT);
    push_ident(g, 0);
    push(g, P_SEMI);
    push(g, c_ident[k][0]);
    push(g, P_INCR);
  }
  push(g, P_RPAREN);
  push(g, P_SP_LBRACE);
}

static void gen_line(struct im_textgen *g) {
  if (g->close_next) {
    g->close_next = false;
    g->indent--;
    push(g, P_RBRACE);
    end_line(g, false);
    return;
  }
  if (g->indent == 0) {
    if (g->n_hist > 0 && chance(g, 0.3)) {
      push_comment(g);
      push(g, P_NL);
      return;
    }
    FORM(g, c_type, 1);
    FORM(g, c_func, 0);
    push(g, P_LPAREN);
    if (chance(g, 0.4)) {
      push(g, c_kw[KW_CONST][1]);
      FORM(g, c_type, 0);
    } else {
      FORM(g, c_type, 1);
    }
    push_ident(g, 0);
    push(g, P_RPAREN);
    push(g, P_SP_LBRACE);
    g->indent = 1;
    end_line(g, true);
    return;
  }
  double r = im_rng_uniform(&g->rng);
  if (r < 0.25) {
    FORM(g, c_type, 1);
    push_ident(g, 0);
    push(g, P_SP_ASSIGN);
    push_expr(g);
  } else if (r < 0.45) {
    push_ident(g, 1);
    push(g, c_op[op_assign[im_rng_below(&g->rng, sizeof op_assign)]][0]);
    push_expr(g);
  } else if (r < 0.66 && g->indent < 3) {
    push_block_head(g, r >= 0.6);
    g->indent++;
    end_line(g, true);
    return;
  } else if (r < 0.8) {
    FORM(g, c_func, 1);
    push(g, P_LPAREN);
    push_ident(g, 1);
    push(g, P_COMMA);
    push_ident(g, 0);
    push(g, P_RPAREN);
  } else if (r < 0.88) {
    push_comment(g);
    end_line(g, false);
    return;
  } else {
    push(g, c_kw[KW_RETURN][1]);
    push_expr(g);
  }
  push(g, P_SEMI);
  end_line(g, false);
}

/* At a boundary: maybe start copying an earlier sentence or line. Sources
 * are starts of earlier sentences or lines whose preceding boundary matches
 * the last one emitted (a sentence end, or the same newline piece), so that
 * spacing, capitals and indentation stay right. */
static bool start_loop(struct im_textgen *g) {
  if (g->degenerate <= 0.0 || g->n_hist < 8 || !chance(g, 0.9 * g->degenerate))
    return false;
  uint32_t last = g->hist[(g->n_hist - 1) % HIST];
  uint32_t window = g->n_hist < HIST ? g->n_hist : HIST;
  uint32_t cand[HIST], n_cand = 0;
  for (uint32_t dist = 4; dist < window; dist++) {
    uint32_t before = g->hist[(g->n_hist - dist - 1) % HIST];
    uint32_t first = g->hist[(g->n_hist - dist) % HIST];
    bool match = is_line_end(last) ? before == last : is_boundary(before) && !is_line_end(before);
    if (match && !is_boundary(first))
      cand[n_cand++] = dist;
  }
  if (n_cand == 0)
    return false;
  uint32_t dist = cand[im_rng_below(&g->rng, n_cand)];
  uint32_t reps = 1;
  while (reps < 8 && chance(g, 0.75 * g->degenerate))
    reps++;
  g->loop_from = (int32_t)((g->n_hist - dist) % HIST);
  g->loop_left = dist * reps;
  return true;
}

void im_textgen_init(struct im_textgen *g, uint64_t seed, double temperature, double top_p,
                     bool code) {
  memset(g, 0, sizeof *g);
  im_rng_seed(&g->rng, seed);
  if (!(temperature >= 0.0))
    temperature = 1.0;
  if (!(top_p > 0.0) || top_p > 1.0)
    top_p = 1.0;
  g->temperature = temperature;
  g->top_p = top_p;
  g->code = code;
  g->loop_from = -1;
  /* Temperature 0 is greedy decoding; a floor of 0.25 keeps some variety. */
  g->zipf_s = ZIPF_S1 / (temperature > 0.25 ? temperature : 0.25);
  /* Code reuses a few names and a rigid line structure; a flatter law keeps
   * its 4-gram repetition near that of prose at normal settings. */
  if (code)
    g->zipf_s *= CODE_FLATTEN;
  g->degenerate = im_textgen_degeneracy(temperature, top_p);
}

double im_textgen_degeneracy(double temperature, double top_p) {
  if (!(temperature >= 0.0))
    temperature = 1.0;
  if (!(top_p > 0.0) || top_p > 1.0)
    top_p = 1.0;
  /* Loops: none from top_p >= 0.8, fully degenerate at top_p <= 0.3;
   * greedy decoding (temperature < 0.3) also loops. */
  double d = (0.8 - top_p) / 0.5;
  double dt = (0.3 - temperature) / 0.3 * 0.8;
  d = d > dt ? d : dt;
  return d < 0.0 ? 0.0 : d > 1.0 ? 1.0 : d;
}

uint32_t im_textgen_next(struct im_textgen *g, const char **text, size_t *len) {
  uint32_t piece;
  if (g->loop_from < 0 && g->q_pos >= g->q_len && !start_loop(g)) {
    bool line_start = g->n_hist == 0 || is_line_end(g->hist[(g->n_hist - 1) % HIST]);
    g->q_len = g->q_pos = 0;
    if (g->code)
      gen_line(g);
    else
      gen_sentence(g, line_start);
  }
  if (g->loop_from >= 0) {
    piece = g->hist[g->loop_from];
    g->loop_from = (int32_t)((uint32_t)(g->loop_from + 1) % HIST);
    if (g->loop_left > 0)
      g->loop_left--;
    if (g->loop_left == 0 && is_boundary(piece))
      g->loop_from = -1;
  } else {
    piece = g->queue[g->q_pos++];
  }
  g->hist[g->n_hist % HIST] = piece;
  g->n_hist++;
  if (text)
    *text = piece_text[piece];
  if (len)
    *len = strlen(piece_text[piece]);
  return piece_id(piece);
}

uint32_t im_textgen_sample_len(struct im_rng *rng, double mean_at_t1, double temperature,
                               uint32_t max_tokens, bool *capped) {
  double t = temperature > 0.0 ? temperature : 0.0;
  double mean = mean_at_t1 * (0.5 + 0.5 * t), sigma = 0.4 + 0.3 * t, v = 1.0;
  if (capped)
    *capped = false;
  if (mean > 0.0 && isfinite(mean) && isfinite(sigma)) {
    /* A log-normal's mean is exp(mu + sigma^2 / 2). */
    double mu = log(mean) - 0.5 * sigma * sigma;
    v = floor(exp(mu + sigma * im_rng_normal(rng)) + 0.5);
  }
  if (!(v >= 1.0))
    v = 1.0;
  if (max_tokens > 0 && v > (double)max_tokens) {
    if (capped)
      *capped = true;
    return max_tokens;
  }
  return v >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

struct gram {
  uint64_t hi, lo;
};

static int gram_cmp(const void *pa, const void *pb) {
  const struct gram *a = pa, *b = pb;
  if (a->hi != b->hi)
    return a->hi < b->hi ? -1 : 1;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

double im_repetition_rate(const uint32_t *ids, size_t n) {
  if (!ids || n < 4)
    return 0.0;
  size_t total = n - 3, distinct = 0;
  /* Each 4-gram is its own exact 128-bit key: sorting counts them without
   * hashing, so the rate is exact. Small outputs stay on the stack. */
  struct gram small[512], *g = small;
  if (total > N_ROWS(small)) {
    g = malloc(total * sizeof *g);
    if (!g) {
      /* Out of memory: exact but quadratic. */
      for (size_t i = 0; i < total; i++) {
        size_t j = 0;
        while (j < i && memcmp(ids + j, ids + i, 4 * sizeof *ids) != 0)
          j++;
        distinct += j == i;
      }
      return 1.0 - (double)distinct / (double)total;
    }
  }
  for (size_t i = 0; i < total; i++) {
    g[i].hi = (uint64_t)ids[i] << 32 | ids[i + 1];
    g[i].lo = (uint64_t)ids[i + 2] << 32 | ids[i + 3];
  }
  qsort(g, total, sizeof *g, gram_cmp);
  for (size_t i = 0; i < total; i++)
    distinct += i == 0 || gram_cmp(&g[i - 1], &g[i]) != 0;
  if (g != small)
    free(g);
  return 1.0 - (double)distinct / (double)total;
}

/* Line starters that mark code in common languages. Case matters: prose
 * lines start "If" or "For", code lines "if (" or "for (". */
static const char *const code_starts[] = {
    "def",    "class", "return", "import", "from",   "#include", "#define", "function",
    "const",  "let",   "var",    "fn",     "func",   "package",  "public",  "private",
    "static", "void",  "int",    "struct", "if",     "for",      "while",   "else",
    "elif",   "try",   "except", "catch",  "switch", "case",     "using",   "namespace",
    "impl",   "pub",   "}",      "//",     "/*",     "#!",       "@",       "template",
};

static bool line_is_code(const char *p, size_t n) {
  while (n > 0 && (*p == ' ' || *p == '\t'))
    p++, n--;
  while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r'))
    n--;
  if (n == 0)
    return false;
  char last = p[n - 1];
  if (last == '{' || last == '}' || last == ';')
    return true;
  for (size_t k = 0; k < N_ROWS(code_starts); k++) {
    size_t wl = strlen(code_starts[k]);
    if (n >= wl && memcmp(p, code_starts[k], wl) == 0) {
      /* A keyword must end there ("format" is not "for"); symbols need not. */
      unsigned char next = n > wl ? (unsigned char)p[wl] : ' ';
      bool alpha = (code_starts[k][wl - 1] | 0x20) >= 'a' && (code_starts[k][wl - 1] | 0x20) <= 'z';
      if (!alpha || next == ' ' || next == '(' || next == ':' || next == '<' || next == '"')
        return true;
    }
  }
  static const char *const ops[] = {"==", "!=", "->", "::", "=>", "();", "){", "+=", "&&"};
  for (size_t k = 0; k < N_ROWS(ops); k++)
    if (memmem(p, n, ops[k], strlen(ops[k])))
      return true;
  return false;
}

bool im_text_looks_like_code(const char *text, size_t len) {
  if (!text)
    return false;
  if (len > 65536) /* the head of a long prompt decides */
    len = 65536;
  if (memmem(text, len, "```", 3))
    return true;
  size_t lines = 0, code = 0, symbols = 0;
  for (size_t i = 0; i < len;) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t e = nl ? (size_t)(nl - text) : len;
    bool blank = true;
    for (size_t k = i; k < e; k++) {
      char c = text[k];
      blank = blank && (c == ' ' || c == '\t' || c == '\r');
      symbols += c == '{' || c == '}' || c == ';' || c == '(' || c == ')' || c == '=';
    }
    if (!blank) {
      lines++;
      code += line_is_code(text + i, e - i);
    }
    i = e + 1;
  }
  if (lines == 1)
    return code == 1 && symbols >= 4;
  return code >= 2 && code * 3 >= lines;
}
