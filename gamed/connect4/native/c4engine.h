/*
 * c4engine.h -- the "Open Line up 4" engine interface used by gamed.
 *
 * An engine is a shared library (engine.so, placed in its own subdirectory of
 * the engines folder, e.g. engines/<name>/engine.so) exporting the ten
 * functions below with C linkage.
 *
 * Conventions
 *   - Players are numbered C4_PLAYER0 (moves first) and C4_PLAYER1.
 *   - Columns (x) and rows (y) count from 0; row 0 is the BOTTOM row.
 *   - BOOL is int: TRUE = 1, FALSE = 0.
 *   - Board sizes: width and height 4..16; the rule is always four in a line
 *     (horizontal, vertical, diagonal).  An engine may refuse a size by
 *     returning FALSE from C4_NewGame.
 *   - Call order: C4_NewGame exactly once before each game; C4_EndGame before
 *     the next C4_NewGame.
 *   - C4_AutoMove both CHOOSES and PLAYS the move.
 *   - Levels are numbered 0..n-1, as reported by C4_EnumLevels.
 */
#ifndef C4ENGINE_H
#define C4ENGINE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define C4_PLAYER0    0
#define C4_PLAYER1    1
#define C4_NOPLAYER (-1)

#ifndef TRUE
#define TRUE 1
#endif
#ifndef FALSE
#define FALSE 0
#endif

#if defined(_WIN32)
#define C4_EXPORT __declspec(dllexport)
#else
#define C4_EXPORT __attribute__((visibility("default")))
#endif

/* Short description of the engine, NUL-terminated, truncated to fit size. */
C4_EXPORT void C4_Desc(char *pc, size_t size);

/* Start a new game on a width x height board; num is unused.
 * Returns TRUE if the game was started, FALSE if the size is refused. */
C4_EXPORT int C4_NewGame(long width, long height, long num);

/* Drop a stone of player into column.
 * Returns TRUE if dropped; FALSE if the column is invalid or full. */
C4_EXPORT int C4_PlayMove(long player, long column);

/* The engine chooses a move for player at the given level AND plays it.
 * Returns the column played, or -1 if the board is full. */
C4_EXPORT long C4_AutoMove(long player, long level);

/* Owner of cell (x, y): C4_PLAYER0, C4_PLAYER1 or C4_NOPLAYER. Row 0 is the bottom. */
C4_EXPORT long C4_GetState(long x, long y);

/* TRUE if player has four (or more) in a line. */
C4_EXPORT int C4_IsWinner(long player);

/* TRUE if the board is full and nobody won. */
C4_EXPORT int C4_IsTie(void);

/* Ends (x1,y1) and (x2,y2) of one winning line of player (unchanged if none). */
C4_EXPORT void C4_WinCoords(long player, long *x1, long *y1, long *x2, long *y2);

/* Ends the game; only C4_NewGame may follow. */
C4_EXPORT void C4_EndGame(void);

/* TRUE and the level's name (e.g. "Easy") in pc if level is supported, else FALSE. */
C4_EXPORT int C4_EnumLevels(long level, char *pc, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* C4ENGINE_H */
