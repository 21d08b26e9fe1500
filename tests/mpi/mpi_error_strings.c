#include "mpi_error_strings.h"

#include <mpi.h>
#include <string.h>

int mpi_takes_error_strings(void) {
  static int known, takes;
  if (!known) {
    known = 1;
    int code = MPI_ERR_OTHER, len = 0;
    char probe[] = "error string probe", back[MPI_MAX_ERROR_STRING] = "";
    takes = PMPI_Add_error_code(MPI_ERR_OTHER, &code) == MPI_SUCCESS && code > MPI_ERR_LASTCODE &&
            PMPI_Add_error_string(code, probe) == MPI_SUCCESS &&
            PMPI_Error_string(code, back, &len) == MPI_SUCCESS && strcmp(back, probe) == 0;
  }
  return takes;
}
