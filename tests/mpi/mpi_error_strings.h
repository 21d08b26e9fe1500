/* Whether this MPI lets an error code added to a predefined class carry its own string. MPICH
 * 4.0's added codes read back as other messages of its own, so efacoll raises the class itself
 * there and its text is in its log line only; the tests then check the class alone. */
#ifndef EFACOLL_TESTS_MPI_ERROR_STRINGS_H
#define EFACOLL_TESTS_MPI_ERROR_STRINGS_H

int mpi_takes_error_strings(void);

#endif
